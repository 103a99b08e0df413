// Private PostgreSQL and Redis servers for fault tests: started on a temporary directory and a free port, stopped and started again at will; never the shared ones.

import { chownSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** A port nobody listens on right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number }
      srv.close(() => resolve(port))
    })
  })
}

/** PostgreSQL refuses to run as root: when the tests run as root, the server runs as `postgres`. */
function asServerUser(cmd: string[]): string[] {
  return process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--', ...cmd] : cmd
}

function run(cmd: string[]): void {
  const p = Bun.spawnSync(cmd, { stdout: 'pipe', stderr: 'pipe' })
  if (p.exitCode !== 0) throw new Error(`${cmd.join(' ')} failed (${p.exitCode}): ${p.stderr.toString()}${p.stdout.toString()}`)
}

/** Whether initdb/pg_ctl and redis-server can be run here. */
export function privateServersAvailable(): boolean {
  return ['initdb', 'pg_ctl', 'redis-server'].every((b) => Bun.which(b) !== null)
}

export interface PrivatePostgres {
  url: string
  port: number
  start(): void
  /** Fast shutdown: open connections are cut, as in a real outage. */
  stop(): void
  /** The server and its backends paused (SIGSTOP): it answers nothing and refuses nothing, as a network blackhole. */
  pause(): void
  resume(): void
  destroy(): void
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const dir = mkdtempSync(join(tmpdir(), 'gw-pg-'))
  if (process.getuid?.() === 0) chownSync(dir, Number(Bun.spawnSync(['id', '-u', 'postgres']).stdout.toString()), Number(Bun.spawnSync(['id', '-g', 'postgres']).stdout.toString()))
  const data = join(dir, 'data')
  const port = await freePort()
  run(asServerUser(['initdb', '-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8']))
  const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50`
  let running = false
  const pg: PrivatePostgres = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    start() {
      run(asServerUser(['pg_ctl', '-D', data, '-o', opts, '-l', join(dir, 'log'), '-w', 'start']))
      running = true
    },
    stop() {
      run(asServerUser(['pg_ctl', '-D', data, '-m', 'fast', '-w', 'stop']))
      running = false
    },
    pause() {
      signalServer('STOP')
    },
    resume() {
      signalServer('CONT')
    },
    destroy() {
      if (running) Bun.spawnSync(asServerUser(['pg_ctl', '-D', data, '-m', 'immediate', '-w', 'stop']))
      rmSync(dir, { recursive: true, force: true })
    },
  }
  /** The postmaster (first line of postmaster.pid) and every process it started. */
  const signalServer = (signal: 'STOP' | 'CONT') => {
    const pid = readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0] as string
    Bun.spawnSync(['pkill', `-${signal}`, '-P', pid])
    Bun.spawnSync(['kill', `-${signal}`, pid])
  }
  pg.start()
  return pg
}

export interface PrivateRedis {
  url: string
  start(): Promise<void>
  /** SIGKILL: the server vanishes mid-conversation. */
  kill(): Promise<void>
  /** SIGSTOP / SIGCONT: the server keeps its connections but answers nothing until resumed. */
  pause(): void
  resume(): void
  destroy(): Promise<void>
}

export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort()
  let proc: ReturnType<typeof Bun.spawn> | undefined
  const r: PrivateRedis = {
    url: `redis://127.0.0.1:${port}`,
    async start() {
      proc = Bun.spawn(['redis-server', '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
        stdout: 'ignore',
        stderr: 'ignore',
      })
      const deadline = performance.now() + 5000
      while (performance.now() < deadline) {
        const ok = await Bun.connect({ hostname: '127.0.0.1', port, socket: { data() {} } }).then(
          (s) => (s.end(), true),
          () => false,
        )
        if (ok) return
        await Bun.sleep(20)
      }
      throw new Error(`redis-server on port ${port} did not start`)
    },
    async kill() {
      proc?.kill('SIGKILL')
      await proc?.exited
      proc = undefined
    },
    pause: () => proc?.kill('SIGSTOP'),
    resume: () => proc?.kill('SIGCONT'),
    destroy: () => r.kill(),
  }
  await r.start()
  return r
}
