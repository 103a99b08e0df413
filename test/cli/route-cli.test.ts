// `gw route set|list|delete`, run as a user would on a database file.

import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const dir = mkdtempSync(join(tmpdir(), 'gw-route-cli-'))
const main = join(import.meta.dir, '../../src/main.ts')
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** gw with --json: the CLI prints tables unless asked for JSON. */
function gw(...args: string[]) {
  const p = Bun.spawnSync([process.execPath, main, ...args, '--json'], { env: { PATH: process.env.PATH ?? '', GW_DB: join(dir, 'gw.db') }, stdout: 'pipe', stderr: 'pipe' })
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
