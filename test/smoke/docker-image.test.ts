// The Docker image built and run for real: build, /health, HEALTHCHECK, /data's modes, a chat request, SIGTERM.
// Run by the Docker leg of `npm test` (scripts/test-docker-leg.ts), which prepares a daemon and the base images
// and passes their names; without them (a plain `bun test`) this file is one skipped test.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { startFake, type FakeUpstream } from '../fakes/upstream'

const root = join(import.meta.dir, '../..')
const BUILD_IMAGE = process.env.GW_TEST_DOCKER_BUILD_IMAGE
const RUNTIME_IMAGE = process.env.GW_TEST_DOCKER_RUNTIME_IMAGE
const IMAGE = 'gw-ci/gw:test'
const BUILD_STAGE = 'gw-ci/gw:test-build'
const name = `gw-ci-${process.pid}`
const volume = `${name}-data`

/** Runs the docker CLI; asynchronous, so the fake upstream in this process keeps answering meanwhile. */
async function docker(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const proc = Bun.spawn(['docker', ...args], { cwd: root, stdout: 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { code, out, err }
}
async function dockerOk(...args: string[]): Promise<string> {
  const r = await docker(...args)
  if (r.code !== 0) throw new Error(`docker ${args.join(' ')} exited ${r.code}:\n${r.err}${r.out}`)
  return r.out.trim()
}
const imageId = async (ref: string) => (await docker('image', 'inspect', '--format', '{{.Id}}', ref)).out.trim()
const logs = async () => {
  const r = await docker('logs', name)
  return r.out + r.err
}

/** A port nothing listens on now (gw in the container takes it through host networking). */
function freePort(): number {
  const probe = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response() })
  const port = probe.port as number
  probe.stop(true)
  return port
}

async function until<T>(what: string, ms: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const got = await probe().catch(() => undefined)
    if (got !== undefined) return got
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}; container log:\n${await logs()}`)
    await Bun.sleep(250)
  }
}

if (!BUILD_IMAGE || !RUNTIME_IMAGE) test.skip('the Docker image (built and run by scripts/test-docker-leg.ts, the Docker leg of npm test)', () => {})
else describe('the Docker image', () => {
  let openai: FakeUpstream
  let url: string
  let key: string

  beforeAll(async () => {
    openai = await startFake('openai')
    // The build stage is tagged too, so that a new build replaces the previous one's layers instead of leaving them dangling.
    const before = [await imageId(BUILD_STAGE), await imageId(IMAGE)]
    const args = ['--network=host', '--build-arg', `BUILD_IMAGE=${BUILD_IMAGE}`, '--build-arg', `RUNTIME_IMAGE=${RUNTIME_IMAGE}`]
    const started = performance.now()
    await dockerOk('build', ...args, '--target', 'build', '-t', BUILD_STAGE, '.')
    await dockerOk('build', ...args, '-t', IMAGE, '.')
    console.log(`docker build: ${((performance.now() - started) / 1000).toFixed(1)} s`)
    const after = [await imageId(BUILD_STAGE), await imageId(IMAGE)]
    for (const old of before) if (old && !after.includes(old)) await docker('rmi', old)

    const port = freePort()
    url = `http://127.0.0.1:${port}`
    await dockerOk('volume', 'create', volume)
    await dockerOk(
      'run', '-d', '--name', name, '--network=host', '-v', `${volume}:/data`,
      '-e', 'GW_HOST=127.0.0.1', '-e', `GW_PORT=${port}`, '-e', `GW_OPENAI_BASE_URL=${openai.url}`, '-e', `OPENAI_API_KEY=${openai.apiKey}`,
      IMAGE,
    )
  }, 600_000)

  afterAll(async () => {
    await docker('rm', '-f', name)
    await docker('volume', 'rm', volume)
    await openai?.stop()
  })

  test('runs as the unprivileged user with the gateway settings and a HEALTHCHECK running `gw healthcheck`', async () => {
    const config = JSON.parse(await dockerOk('image', 'inspect', '--format', '{{json .Config}}', IMAGE)) as {
      User: string
      Env: string[]
      Healthcheck: { Test: string[] }
      Volumes: Record<string, unknown>
    }
    expect(config.User).toBe('gw')
    expect(config.Healthcheck.Test).toEqual(['CMD', '/usr/local/bin/gw', 'healthcheck'])
    expect(Object.keys(config.Volumes)).toEqual(['/data'])
    expect(config.Env).toEqual(expect.arrayContaining(['GW_DB=/data/gw.db', 'GW_PROMPTS_DIR=/prompts', 'GW_LOG_FORMAT=json']))
    // No home directory: nothing of the user's lands in /data.
    expect(await dockerOk('exec', name, 'sh', '-c', 'echo "$HOME $(id -un)"')).toBe('/nonexistent gw')
  })

  test('/health answers 200 on GW_HOST:GW_PORT', async () => {
    const res = await until('/health', 30_000, async () => {
      const r = await fetch(`${url}/health`)
      return r.status === 200 ? r : undefined
    })
    expect(((await res.json()) as { ok: boolean }).ok).toBe(true)
  }, 35_000)

  test('a chat request with the service key from the JSON start-up log goes through the fake upstream', async () => {
    key = await until('the service key line', 10_000, async () => {
      const line = (await logs()).split('\n').find((l) => l.includes('"serviceKey"'))
      return line ? (JSON.parse(line) as { serviceKey: string }).serviceKey : undefined
    })
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'Say hi please' }] }),
    })
    expect(res.status).toBe(200)
    expect(((await res.json()) as { choices: { message: { content: string } }[] }).choices[0]?.message.content).toBe('Hello from fake-openai (gpt-4o).')
    expect(openai.requests.at(-1)?.headers.authorization).toBe(`Bearer ${openai.apiKey}`)
    // One JSON access-log line for it on stdout (written once the answer is sent).
    const access = await until('the access-log line', 5_000, async () => {
      const lines = (await logs()).split('\n').filter((l) => l.includes('/v1/chat/completions'))
      return lines.length ? lines : undefined
    })
    expect(access.length).toBe(1)
    expect(JSON.parse(access[0] as string)).toMatchObject({ status: 200 })
  }, 15_000)

  test('a new database gets no example prompts (GW_PROMPTS_DIR=/prompts is empty)', async () => {
    const res = await fetch(`${url}/v1/prompts/summarize/run`, {
      method: 'POST',
      headers: { authorization: `GwKey ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ variables: { text: 'Bees make honey.' } }),
    })
    expect(res.status).toBe(404)
    expect(await logs()).not.toContain('prompt files:')
  })

  test('/data holds only gw files: the folder at 0700, each file at 0600, owned by gw, no dotfiles', async () => {
    const entries = (await dockerOk('exec', name, 'find', '/data', '-printf', '%p %m %u %y\\n')).split('\n').sort()
    expect(entries[0]).toBe('/data 700 gw d')
    const files = entries.slice(1)
    expect(files.map((e) => e.split(' ')[0])).toEqual(expect.arrayContaining(['/data/gw.db', '/data/gw.secret']))
    for (const e of files) expect(e).toMatch(/^\/data\/[^./][^/ ]* 600 gw f$/)
  })

  test('the HEALTHCHECK turns healthy with the image\'s own timing (first probe after its 30 s interval)', async () => {
    const status = await until('a health verdict', 60_000, async () => {
      const s = await dockerOk('inspect', '--format', '{{.State.Health.Status}}', name)
      return s === 'starting' ? undefined : s
    })
    expect(status).toBe('healthy')
    const log = JSON.parse(await dockerOk('inspect', '--format', '{{json .State.Health.Log}}', name)) as { ExitCode: number }[]
    expect(log.every((probe) => probe.ExitCode === 0)).toBe(true)
  }, 65_000)

  test('docker stop (SIGTERM) stops it cleanly: exit code 0 well within the grace period, the log says so', async () => {
    const started = performance.now()
    await dockerOk('stop', '--time', '20', name)
    const seconds = (performance.now() - started) / 1000
    const state = JSON.parse(await dockerOk('inspect', '--format', '{{json .State}}', name)) as { ExitCode: number; OOMKilled: boolean }
    expect(state).toMatchObject({ ExitCode: 0, OOMKilled: false })
    expect(seconds).toBeLessThan(10)
    const lines = (await logs()).split('\n').filter(Boolean).slice(-2).map((l) => (JSON.parse(l) as { msg: string }).msg)
    expect(lines[0]).toStartWith('SIGTERM received')
    expect(lines[1]).toBe('stopped')
  }, 30_000)
})
