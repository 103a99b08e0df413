// Prompts as code: Markdown files with YAML front matter in GW_PROMPTS_DIR (or embedded in the binary), loaded at start.

import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { basename, join, resolve } from 'node:path'
import { contentHash, type PromptAdmin, toVersionContent } from '../admin/prompt-admin'
import { DEFAULT_ORG } from '../admin/bootstrap'
import { badRequest } from '../errors'
import type { Store } from '../store/types'

export interface PromptFile {
  /** Relative to the prompts folder: `summarize.md`, `partials/tone.md`. */
  path: string
  /** Where it was read from, as the dashboard and admin API show it: the file's absolute path, or `(built in) prompts/…`. */
  source: string
  text: string
}

export interface LoadReport {
  prompts: number
  newVersions: number
  published: number
  partials: number
  skipped: string[]
}

const EMBEDDED_PREFIX = 'prompts/'

/** The folder's `*.md` and `partials/*.md`; for the default folder when it is missing, the examples built into the binary. */
export async function readPromptFiles(dir: string, isDefault: boolean): Promise<PromptFile[] | undefined> {
  if (existsSync(dir)) {
    const files: PromptFile[] = []
    for (const sub of ['', 'partials']) {
      const d = join(dir, sub)
      if (!existsSync(d)) continue
      for (const f of readdirSync(d).sort())
        if (f.endsWith('.md') && f !== 'README.md')
          files.push({ path: sub ? `${sub}/${f}` : f, source: resolve(d, f), text: readFileSync(join(d, f), 'utf8') })
    }
    return files
  }
  if (!isDefault) return undefined
  const embedded = Bun.embeddedFiles.filter((b) => (b as Blob & { name: string }).name.startsWith(EMBEDDED_PREFIX))
  return Promise.all(
    embedded
      .map((b) => ({ blob: b, path: (b as Blob & { name: string }).name.slice(EMBEDDED_PREFIX.length) }))
      .filter(({ path }) => /^(partials\/)?[^/]+\.md$/.test(path) && !path.endsWith('README.md'))
      .map(async ({ blob, path }) => ({ path, source: `(built in) ${EMBEDDED_PREFIX}${path}`, text: await blob.text() })),
  )
}

/** `---\nyaml\n---\nbody` → front matter and body (CRLF tolerated). */
export function splitFrontMatter(text: string): { front: Record<string, unknown>; body: string } {
  const t = text.replace(/\r\n/g, '\n')
  const m = /^---\n([\s\S]*?)\n---(?:\n|$)/.exec(t)
  if (!m) return { front: {}, body: t }
  let front: unknown
  try {
    front = Bun.YAML.parse(m[1] as string)
  } catch (err) {
    throw badRequest(`front matter is not valid YAML: ${err instanceof Error ? err.message : err}`)
  }
  if (front !== null && (typeof front !== 'object' || Array.isArray(front))) throw badRequest('front matter must be a YAML mapping')
  return { front: (front ?? {}) as Record<string, unknown>, body: t.slice(m[0].length) }
}

/** `variables:` as a mapping (`name: type` or `name: {type, required}`) or a list of `{name, type, required}`. */
function variablesOf(raw: unknown): unknown {
  if (raw === undefined || raw === null || Array.isArray(raw)) return raw ?? undefined
  if (typeof raw !== 'object') throw badRequest('variables must be a mapping or a list')
  return Object.entries(raw).map(([name, v]) => (typeof v === 'string' ? { name, type: v } : { name, ...(v as object) }))
}

/** A prompt file's front matter and body → the admin API's version body. */
export function versionBodyOf(front: Record<string, unknown>, body: string): Record<string, unknown> {
  const known = new Set(['slug', 'name', 'org', 'model', 'temperature', 'max_tokens', 'publish', 'system', 'variables'])
  const unknown = Object.keys(front).filter((k) => !known.has(k))
  if (unknown.length) throw badRequest(`unknown front matter field(s): ${unknown.join(', ')} (known: ${[...known].join(', ')})`)
  const out: Record<string, unknown> = {
    systemTemplate: typeof front.system === 'string' ? front.system.trimEnd() : front.system,
    userTemplate: body.trim(),
    variables: variablesOf(front.variables),
    model: front.model,
    temperature: front.temperature,
    maxTokens: front.max_tokens,
    publish: front.publish,
  }
  for (const k of Object.keys(out)) if (out[k] === undefined) delete out[k]
  return out
}

/**
 * Loads files into the store: a prompt whose content changed gets a new version; unchanged files change
 * nothing. Each prompt loaded is marked with its file, and a prompt whose file is gone loses the mark.
 */
export async function loadPromptFiles(store: Store, admin: PromptAdmin, files: PromptFile[]): Promise<LoadReport> {
  const report: LoadReport = { prompts: 0, newVersions: 0, published: 0, partials: 0, skipped: [] }
  const managed = new Set<string>()
  for (const file of files) {
    try {
      if (file.path.startsWith('partials/')) {
        await loadPartial(store, admin, file)
        report.partials++
      } else {
        managed.add(await loadPrompt(store, admin, file, report))
        report.prompts++
      }
    } catch (err) {
      report.skipped.push(`${file.path}: ${err instanceof Error ? err.message : String(err)}`)
    }
  }
  for (const org of await store.orgs.listOrgs())
    for (const p of await store.prompts.listPrompts(org.id))
      if (p.sourceFile !== undefined && !managed.has(p.id)) await store.prompts.setSourceFile(p.id, undefined)
  return report
}

async function loadPartial(store: Store, admin: PromptAdmin, file: PromptFile): Promise<void> {
  const { front, body } = splitFrontMatter(file.text)
  const org = typeof front.org === 'string' ? front.org : DEFAULT_ORG
  const name = basename(file.path, '.md')
  const template = body.replace(/\n+$/, '')
  if ((await store.prompts.getPartials(org)).get(name) !== template) await admin.putPartial(org, name, { template })
}

/** Returns the prompt's id. */
async function loadPrompt(store: Store, admin: PromptAdmin, file: PromptFile, report: LoadReport): Promise<string> {
  const { front, body } = splitFrontMatter(file.text)
  if (front.model === undefined) throw badRequest('no front matter with a "model" (see docs/prompts.md)')
  const org = typeof front.org === 'string' ? front.org : DEFAULT_ORG
  const slug = typeof front.slug === 'string' ? front.slug : basename(file.path, '.md')
  const { content, publish } = toVersionContent(versionBodyOf(front, body))
  const name = typeof front.name === 'string' ? front.name : undefined
  let prompt = await store.prompts.findPrompt(org, slug)
  if (!prompt) prompt = await admin.requirePrompt(org, (await admin.createPrompt(org, { slug, ...(name ? { name } : {}) })).id)
  const latest = prompt.currentVersion === undefined ? undefined : await store.prompts.getVersion(prompt.id, prompt.currentVersion)
  if (latest?.contentHash !== contentHash(content)) {
    const v = await store.prompts.addVersion(prompt.id, content, contentHash(content), publish)
    await admin.audit.record({ action: 'prompt.version.create', org, target: `prompt:${slug}/v${v.version}`, before: null, after: { version: v.version, published: publish, source: file.source } })
    report.newVersions++
    if (publish) report.published++
  } else if (publish && prompt.publishedVersion !== latest.version) {
    await store.prompts.publish(prompt.id, latest.version)
    await admin.audit.record({ action: 'prompt.publish', org, target: `prompt:${slug}`, before: { publishedVersion: prompt.publishedVersion ?? null }, after: { publishedVersion: latest.version } })
    report.published++
  }
  if (prompt.sourceFile !== file.source) await store.prompts.setSourceFile(prompt.id, file.source)
  return prompt.id
}
