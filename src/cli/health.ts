// `gw health`: asks the local instance's GET /health/ready (for container health checks, without curl in the image).

import type { Config } from '../config'

/** Exit code 0 when this instance's store is reachable and migrated, 1 otherwise. */
export async function runHealth(config: Config): Promise<void> {
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host
  try {
    const res = await fetch(`http://${host.includes(':') ? `[${host}]` : host}:${config.port}/health/ready`, { signal: AbortSignal.timeout(3000) })
    console.log(await res.text())
    process.exitCode = res.status === 200 ? 0 : 1
  } catch (err) {
    console.error(`gw: no answer from ${host}:${config.port}: ${err instanceof Error ? err.message : err}`)
    process.exitCode = 1
  }
}
