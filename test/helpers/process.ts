// Runs `gw serve` from source as a child process (for shutdown and start-up tests) and reads its output.

import { join } from 'node:path'

const MAIN = join(import.meta.dir, '../../src/main.ts')

export interface GwProcess {
  proc: ReturnType<typeof Bun.spawn>
  url: string
  key: string | undefined
  output(): string
  /** What it wrote to stderr so far (read all along, like stdout). */
  errors(): string
}

/** The start-up line naming the address, as text or as JSON (GW_LOG_FORMAT=json). */
const LISTENING = /listening on (\S+)|"address":"([^"]+)"/

/** Starts `gw serve --port 0` with `env` and waits for it to listen. */
export async function spawnGw(env: Record<string, string>, cwd?: string): Promise<GwProcess> {
  const proc = Bun.spawn([process.execPath, MAIN, 'serve', '--port', '0'], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
    ...(cwd ? { cwd } : {}),
  })
  let out = ''
  let err = ''
  // stderr is read from the start: a child whose stderr pipe fills (say, a retried error reported
  // again and again) blocks in its next write, which would stall the very thing a test watches.
  const errDone = (async () => {
    const errDecoder = new TextDecoder()
    for await (const chunk of proc.stderr as ReadableStream<Uint8Array>) err += errDecoder.decode(chunk, { stream: true })
  })()
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader()
  const decoder = new TextDecoder()
  const deadline = Date.now() + 10_000
  while (!LISTENING.test(out) || (/created a service key/.test(out) && !/gw_sk_\w+/.test(out))) {
    if (Date.now() > deadline) throw new Error(`gw did not start:\n${out}`)
    const { value, done } = await reader.read()
    if (done) {
      await errDone
      throw new Error(`gw exited:\n${out}\n${err}`)
    }
    out += decoder.decode(value)
  }
  // Keep draining stdout so the child never blocks on a full pipe.
  void (async () => {
    for (;;) {
      const { value, done } = await reader.read()
      if (done) return
      out += decoder.decode(value)
    }
  })()
  return {
    proc,
    url: ((m) => m[1] ?? m[2])(LISTENING.exec(out) as RegExpExecArray) as string,
    key: /gw_sk_\w+/.exec(out)?.[0],
    output: () => out,
    errors: () => err,
  }
}

/** PUT /admin/orgs/default/policy on a spawned gw; throws unless it answers 200. */
export async function putDefaultPolicy(gw: GwProcess, adminToken: string, policy: object): Promise<void> {
  const res = await fetch(`${gw.url}/admin/orgs/default/policy`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify(policy),
  })
  if (res.status !== 200) throw new Error(`PUT policy: ${res.status} ${await res.text()}`)
}
