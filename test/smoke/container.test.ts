// The container image's contract: secrets and local state stay out of the build context, pinned bases, a working HEALTHCHECK.

import { expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { spawnGw } from '../helpers/process'

const root = join(import.meta.dir, '../..')
const main = join(root, 'src/main.ts')

/** Does a .dockerignore pattern list exclude this path? (Docker's rules for the simple patterns used: globs, no negation.) */
function ignored(patterns: string[], path: string): boolean {
  const re = (p: string) => new RegExp(`^${p.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}(/.*)?$`)
  return patterns.some((p) => re(p).test(path) || re(p).test(path.split('/').pop() as string))
}

test('.dockerignore keeps secrets, databases and local state out of the build context, and keeps the sources in', () => {
  const patterns = readFileSync(join(root, '.dockerignore'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
  expect(patterns.some((p) => p.startsWith('!'))).toBe(false)
  for (const path of ['.env', '.env.local', 'gw.db', 'data/gw.db', 'data/gw.db-wal', 'data/gw.secret', 'gw.secret', 'node_modules/x', '.git/HEAD'])
    expect({ path, ignored: ignored(patterns, path) }).toEqual({ path, ignored: true })
  for (const path of ['package.json', 'package-lock.json', 'src/main.ts', 'src/catalog/models.json', 'scripts/build.ts', 'prompts/summarize.md'])
    expect({ path, ignored: ignored(patterns, path) }).toEqual({ path, ignored: false })
})

test('base images are pinned to exact releases, overridable with --build-arg, and the image has a HEALTHCHECK running `gw healthcheck`', () => {
  const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8')
  const args = new Map([...dockerfile.matchAll(/^ARG\s+(\w+)=(\S+)/gm)].map((m) => [m[1] as string, m[2] as string]))
  const froms = [...dockerfile.matchAll(/^FROM\s+(\S+)/gm)].map((m) => m[1] as string)
  expect(froms.map((f) => /^\$\{(\w+)\}$/.exec(f)?.[1])).toEqual(['BUILD_IMAGE', 'RUNTIME_IMAGE'])
  for (const image of froms.map((f) => args.get(f.slice(2, -1)))) expect(image).toMatch(/:\d+\.\d+(\.\d+)?-|@sha256:/)
  expect(dockerfile).toMatch(/^HEALTHCHECK .*CMD \["\/usr\/local\/bin\/gw", "healthcheck"\]/m)
})

test('gw healthcheck exits 0 against a running gateway and 1 when nothing answers', async () => {
  const gw = await spawnGw({ GW_DB: ':memory:' })
  try {
    const port = new URL(gw.url).port
    const run = (p: string) => Bun.spawnSync([process.execPath, main, 'healthcheck'], { env: { PATH: process.env.PATH ?? '', GW_PORT: p, GW_DB: ':memory:' } })
    expect(run(port).exitCode).toBe(0)
    gw.proc.kill('SIGKILL')
    await gw.proc.exited
    expect(run(port).exitCode).toBe(1)
  } finally {
    gw.proc.kill('SIGKILL')
  }
})
