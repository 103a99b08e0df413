// Authentication comes before the body (PRODUCT §4): a caller without a valid credential gets 401
// whatever it sends, and gw neither waits for, buffers nor parses that body.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { type GwProcess, spawnGw } from '../helpers/process'

const KEY = 'gw_sk_authbeforebody00000000000000000000000000000000'
const MB = 1024 * 1024
let openai: FakeUpstream
let gw: GwProcess
let port: number
const dir = mkdtempSync(join(tmpdir(), 'gw-authbody-'))

beforeAll(async () => {
  openai = await startFake('openai')
  gw = await spawnGw({
    GW_DB: join(dir, 'gw.db'),
    GW_SERVICE_KEY: KEY,
    GW_OPENAI_BASE_URL: openai.url,
    OPENAI_API_KEY: openai.apiKey,
    GW_MAX_BODY_BYTES: String(20 * MB),
  })
  port = Number(new URL(gw.url).port)
})
afterAll(async () => {
  gw.proc.kill('SIGKILL')
  await openai.stop()
  rmSync(dir, { recursive: true, force: true })
})

/**
 * Sends the request head declaring `declared` body bytes but only the first `sent` of them, and
 * returns the status line and body of the answer, which must come while the rest is still unsent.
 */
function answerBeforeBody(path: string, auth: string | null, declared: number, sent: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const head = [
      `POST ${path} HTTP/1.1`,
      'Host: gw.test',
      'Content-Type: application/json',
      ...(auth ? [`Authorization: ${auth}`] : []),
      `Content-Length: ${declared}`,
      '',
      '',
    ].join('\r\n')
    const socket = connect(port, '127.0.0.1', () => socket.write(head + sent))
    let got = ''
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`no answer within 5 s while the body was incomplete; got: ${got}`))
    }, 5000)
    socket.on('data', (d: Buffer) => {
      got += d.toString()
      const end = got.indexOf('\r\n\r\n')
      const length = /content-length: (\d+)/i.exec(got)?.[1]
      if (end < 0 || length === undefined || got.length < end + 4 + Number(length)) return
      clearTimeout(timer)
      socket.destroy()
      resolve({ status: Number(got.split(' ')[1]), body: got.slice(end + 4) })
    })
    socket.on('error', () => {})
  })
}

const expectUnauthorized = (r: { status: number; body: string }) => {
  expect(r.status).toBe(401)
  expect(JSON.parse(r.body)).toMatchObject({ error: true, code: 'unauthorized' })
}

test('no key: 401 before the body has arrived, for a large, an over-limit and a malformed body', async () => {
  for (const path of ['/v1/chat/completions', '/v1/prompts/any/run', '/mcp']) {
    expectUnauthorized(await answerBeforeBody(path, null, 10 * MB, '{"model":"openai/gpt-4o","messages":['))
    // Over GW_MAX_BODY_BYTES: still 401, not 413 — the size is not looked at before the credential.
    expectUnauthorized(await answerBeforeBody(path, null, 1024 * MB, '{"model"'))
    expectUnauthorized(await answerBeforeBody(path, null, 9, '{not json'))
    // A credential that does not verify is the same as none.
    expectUnauthorized(await answerBeforeBody(path, 'GwKey gw_sk_wrong000000000000000000000000000000000000000', 10 * MB, '{'))
  }
  expect(openai.requests.length).toBe(0)
})

test('with a valid key the body is read and checked: 413 over the limit, 400 for malformed JSON', async () => {
  const over = await answerBeforeBody('/v1/chat/completions', `GwKey ${KEY}`, 1024 * MB, '{')
  expect(over.status).toBe(413)
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `GwKey ${KEY}`, 'content-type': 'application/json' },
    body: '{not json',
  })
  expect(res.status).toBe(400)
  expect(((await res.json()) as { message: string }).message).toContain('Malformed JSON body')
})

const peakRssMb = () => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${gw.proc.pid}/status`, 'utf8'))?.[1]) / 1024
const rssMb = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${gw.proc.pid}/status`, 'utf8'))?.[1]) / 1024

/** Sends a whole `size`-byte body without a credential; resolves with the status once the answer is in. */
function sendWholeBody(size: number, chunk: Buffer): Promise<number> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    let got = ''
    let status = 0
    const finish = () => {
      socket.destroy()
      resolve(status)
    }
    socket.on('connect', async () => {
      socket.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: gw.test\r\nContent-Length: ${size}\r\n\r\n`)
      for (let sent = 0; sent < size && !socket.destroyed && !status; sent += chunk.length)
        if (!socket.write(chunk)) await new Promise((r) => socket.once('drain', r).once('close', r))
    })
    socket.on('data', (d: Buffer) => {
      got += d.toString()
      if (!status && got.includes('\r\n')) status = Number(got.split(' ')[1])
      if (got.includes('\r\n\r\n') && got.includes('}')) finish()
    })
    socket.on('close', () => resolve(status))
    socket.on('error', () => {})
  })
}

test('100 concurrent 10 MB bodies without credentials: all 401, memory does not grow', async () => {
  const chunk = Buffer.alloc(64 * 1024, 'a')
  // Warm-up: the connection and answer paths exist before the baseline is read.
  await Promise.all(Array.from({ length: 10 }, () => sendWholeBody(10 * MB, chunk)))
  await Bun.sleep(300)
  const before = rssMb()
  const statuses = await Promise.all(Array.from({ length: 100 }, () => sendWholeBody(10 * MB, chunk)))
  expect(statuses.every((s) => s === 401)).toBe(true)
  // 100 × 10 MB = 1,000 MB offered; buffering even a tenth of it would show here.
  expect(peakRssMb() - before).toBeLessThan(60)
  expect((await fetch(`${gw.url}/health`)).status).toBe(200)
}, 60_000)

test('the body left unread is never taken for another request on the same connection', async () => {
  const inner = `GET /health HTTP/1.1\r\nHost: gw.test\r\n\r\n`
  const head = `POST /v1/chat/completions HTTP/1.1\r\nHost: gw.test\r\nContent-Length: ${inner.length}\r\n\r\n`
  for (const delayMs of [0, 200]) {
    const got = await new Promise<string>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.write(head)
        setTimeout(() => socket.write(inner), delayMs) // with the head, or after the 401 went out
      })
      let out = ''
      socket.on('data', (d: Buffer) => {
        out += d.toString()
      })
      socket.on('error', () => {})
      setTimeout(() => {
        socket.destroy()
        resolve(out)
      }, delayMs + 500)
    })
    expect(got.split('\r\n').filter((l) => l.startsWith('HTTP/1.1'))).toEqual(['HTTP/1.1 401 Unauthorized'])
  }
})
