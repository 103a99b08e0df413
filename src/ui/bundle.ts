// The dashboard's files (page, script, styles) as gw serves them: bundled once, each with the headers that forbid framing.

import { basename } from 'node:path'
import index from './index.html'

/** On every dashboard answer: no other site may show the dashboard in a frame (docs/dashboard.md). */
export const FRAME_HEADERS: Readonly<Record<string, string>> = {
  'x-frame-options': 'DENY',
  'content-security-policy': "frame-ancestors 'none'",
}

/** Where the page's script and styles are served. */
export const ASSETS_PATH = '/ui/assets/'

export interface DashboardFile {
  body: Blob
  type: string
}

export interface DashboardBundle {
  page: DashboardFile
  /** By file name (content-hashed, so they may be cached for good). */
  assets: Map<string, DashboardFile>
}

/**
 * The compiled binary holds the bundle `bun build --compile` made (HTMLBundle.files, asset URLs at the
 * root, moved under ASSETS_PATH here); run from source, Bun.build makes it on first use.
 */
async function build(): Promise<DashboardBundle> {
  const assets = new Map<string, DashboardFile>()
  let page: DashboardFile | undefined
  if (index.files) {
    const names = index.files.filter((f) => f.loader !== 'html').map((f) => basename(f.path))
    for (const f of index.files) {
      const file = { body: Bun.file(f.path) as Blob, type: f.headers['content-type'] }
      if (f.loader !== 'html') assets.set(basename(f.path), file)
      else {
        let html = await file.body.text()
        for (const name of names) for (const at of [`"/${name}"`, `"./${name}"`]) html = html.replaceAll(at, `"${ASSETS_PATH}${name}"`)
        page = { body: new Blob([html]), type: file.type }
      }
    }
  } else {
    const out = await Bun.build({
      entrypoints: [index.index],
      target: 'browser',
      minify: true,
      publicPath: ASSETS_PATH,
      define: { 'process.env.NODE_ENV': '"production"' },
    })
    if (!out.success) throw new Error(`the dashboard did not build: ${out.logs.join('; ')}`)
    for (const o of out.outputs) {
      const file = { body: o as Blob, type: o.type }
      if (o.path.endsWith('.html')) page = file
      else assets.set(basename(o.path), file)
    }
  }
  if (!page) throw new Error('the dashboard bundle has no page')
  return { page, assets }
}

let bundle: Promise<DashboardBundle> | undefined

/** The bundle, built once per process. */
export function dashboardBundle(): Promise<DashboardBundle> {
  bundle ??= build()
  bundle.catch(() => {
    bundle = undefined
  })
  return bundle
}

/** A dashboard file as an answer: immutable assets are cached for good, the page is revalidated. */
export function fileResponse(file: DashboardFile, immutable: boolean): Response {
  return new Response(file.body, {
    headers: {
      'content-type': file.type,
      'cache-control': immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
      ...FRAME_HEADERS,
    },
  })
}

/** Under `npm run dev` Bun serves the page itself (bundled on request, hot reload): these are its routes. */
export const devPageRoutes = { '/ui': index, '/ui/': index }
