// Builds the single binary, runs it on a fresh directory, and sends a chat request through it.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startFake, type FakeUpstream } from '../fakes/upstream'

const root = join(import.meta.dir, '../..')
let dir: string
let openai: FakeUpstream
let binary: string

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gw-bin-'))
  binary = join(dir, 'gw')
  const build = Bun.spawnSync([process.execPath, 'scripts/build.ts', binary], { cwd: root, stderr: 'pipe', stdout: 'pipe' })
  if (build.exitCode !== 0) throw new Error(`build failed: ${build.stderr.toString()}`)
  openai = await startFake('openai')
}, 60_000)
afterAll(async () => {
  await openai.stop()
  rmSync(dir, { recursive: true, force: true })
})

/** Reads stdout until `pattern` matches; returns the match. */
async function waitFor(reader: ReadableStreamDefaultReader<Uint8Array>, seen: { text: string }, pattern: RegExp) {
  const decoder = new TextDecoder()
  const deadline = Date.now() + 10_000
  while (!pattern.test(seen.text)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${pattern}; got:\n${seen.text}`)
    const { value, done } = await reader.read()
    if (done) throw new Error(`process ended; output:\n${seen.text}`)
    seen.text += decoder.decode(value)
  }
  return pattern.exec(seen.text) as RegExpExecArray
}

test('dist/gw starts offline on its embedded SQLite, answers, and flushes its log on SIGTERM', async () => {
  const proc = Bun.spawn([binary, 'serve', '--port', '0'], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '', GW_OPENAI_BASE_URL: openai.url, OPENAI_API_KEY: openai.apiKey },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const reader = proc.stdout.getReader()
  const seen = { text: '' }
  const url = (await waitFor(reader, seen, /listening on (http:\/\/\S+)/))[1] as string
  const key = (await waitFor(reader, seen, /(gw_sk_[A-Za-z0-9]+)/))[1] as string
  // The binary's hints name its commands as `gw …`.
  await waitFor(reader, seen, /another one at any time: gw key create/)

  const health = await fetch(`${url}/health`)
  expect(health.status).toBe(200)
  expect((await health.json()) as object).toMatchObject({ ok: true, checks: { logWriter: { status: 'ok', restarts: 0 } } })

  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'Say hi please' }] }),
  })
  expect(res.status).toBe(200)
  const id = res.headers.get('x-gw-request-id') as string
  expect(((await res.json()) as any).choices[0].message.content).toBe('Hello from fake-openai (gpt-4o).')
  expect(openai.requests.at(-1)?.headers.authorization).toBe(`Bearer ${openai.apiKey}`)

  // No prompts/ folder here: the example prompts built into the binary were loaded.
  expect(seen.text).toContain('prompt files: 4 prompts, 2 partials')
  const ran = await fetch(`${url}/v1/prompts/summarize/run`, {
    method: 'POST',
    headers: { authorization: `GwKey ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ variables: { text: 'Bees make honey.', max_words: 5 } }),
  })
  expect(ran.status).toBe(200)
  expect((openai.requests.at(-1)?.body as any).messages[1].content).toContain('Bees make honey.')

  // A log page is read on the binary's read thread (its own connection), not on the serving one.
  const page = await fetch(`${url}/v1/logs?model=openai/gpt-4o&limit=5`, { headers: { authorization: `GwKey ${key}` } })
  expect(page.status).toBe(200)
  expect(((await page.json()) as { data: { requestId: string }[] }).data.map((e) => e.requestId)).toContain(id)

  // The MCP gateway, loaded on the first /mcp request, is inside the binary too.
  const mcp = await fetch(`${url}/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'smoke', version: '1' } } }),
  })
  expect(mcp.status).toBe(200)
  expect(await mcp.text()).toContain('"protocolVersion"')

  proc.kill('SIGTERM')
  expect(await proc.exited).toBe(0)
  const stderr = await new Response(proc.stderr).text()
  expect(stderr).not.toContain('read thread failed')
  // The log entry was built and written by the log thread, a second module inside the binary.
  expect(stderr).not.toContain('log thread failed')
  const db = new Database(join(dir, 'data/gw.db'), { readonly: true })
  const row = db.query('SELECT status FROM request_logs WHERE request_id = ?1').get(id) as { status: number } | null
  db.close()
  expect(row?.status).toBe(200)
}, 30_000)
