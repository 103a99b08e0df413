// `gw route set|list|delete` and `gw provider key add|remove`, run as a user would on a database file.

import { afterAll, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

// Each test spawns gw several times; on a loaded machine one spawn can take a second or more.
setDefaultTimeout(60_000)

const dir = mkdtempSync(join(tmpdir(), 'gw-route-cli-'))
const main = join(import.meta.dir, '../../src/main.ts')
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** gw with --json: the CLI prints tables unless asked for JSON. */
function gw(...args: string[]) {
  return gwWith({}, ...args)
}

function gwWith(env: Record<string, string>, ...args: string[]) {
  const p = Bun.spawnSync([process.execPath, main, ...args, '--json'], { env: { PATH: process.env.PATH ?? '', GW_DB: join(dir, 'gw.db'), ...env }, stdout: 'pipe', stderr: 'pipe' })
  return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() }
}

test('routes are set with weights and fallbacks, listed and deleted', () => {
  const set = gw('route', 'set', 'fast', '--targets', 'openai/gpt-4o-mini=3,mistral/mistral-small-latest', '--fallback', 'anthropic/claude-haiku-4-5', '--strategy', 'weighted')
  expect(set.code).toBe(0)
  expect(JSON.parse(set.out)).toMatchObject({
    name: 'fast',
    targets: [
      { model: 'openai/gpt-4o-mini', weight: 3 },
      { model: 'mistral/mistral-small-latest', weight: 1 },
    ],
    fallback: [{ model: 'anthropic/claude-haiku-4-5' }],
  })
  expect(JSON.parse(gw('route', 'list').out).data.map((r: { name: string }) => r.name)).toEqual(['fast'])
  expect(gw('route', 'set', 'slow', '--targets', 'openai/gpt-4o=0').err).toContain('the weight after "=" must be a number above 0')
  expect(gw('route', 'set', 'slow').err).toContain('--targets is required')
  expect(gw('route', 'delete', 'fast').code).toBe(0)
  const again = gw('route', 'delete', 'fast')
  expect(again.code).toBe(1)
  expect(again.err).toContain('No route "fast"')
})

test('provider keys are added by name with a weight, shown masked, and removed', () => {
  const add = gwWith({ OPENAI_API_KEY: 'sk-cli-backup-key-000042' }, 'provider', 'key', 'add', 'openai', 'backup', '--weight', '3')
  expect(add.code).toBe(0)
  expect(JSON.parse(add.out)).toMatchObject({ provider: 'openai', name: 'backup', apiKey: 'sk-…0042', weight: 3 })
  expect(add.out).not.toContain('sk-cli-backup')
  expect(JSON.parse(gw('org', 'show').out).providers).toEqual([expect.objectContaining({ name: 'backup', weight: 3 })])
  expect(gw('provider', 'key', 'remove', 'openai', 'backup').code).toBe(0)
  expect(gw('provider', 'key', 'remove', 'openai', 'backup').err).toContain('No openai key named "backup"')
  expect(gw('provider', 'key', 'rotate', 'openai', 'x').err).toContain('unknown subcommand "provider key rotate"')
})
