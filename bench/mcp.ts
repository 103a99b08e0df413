// `bun bench/mcp.ts`: what the MCP gateway adds to a tools/call (PRODUCT §20, target ≤ 1 ms p50): the SDK's
// client calling a local MCP server directly, and through gw's /mcp (logging bodies, a tool policy, a rate
// limit that never refuses), one call at a time, the two taking turns; gw pinned to CPU 0, the server to CPU 1.

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { BENCH_ADMIN, BENCH_KEY, benchGwEnv, percentiles, startBenchScript, startPinnedGw } from './load'

const WARMUP = Number(process.env.MCP_BENCH_WARMUP ?? 5000)
const MEASURED = Number(process.env.MCP_BENCH_CALLS ?? 2000)
const TURN = 250

const work = mkdtempSync(join(tmpdir(), 'gw-bench-mcp-'))
const upstream = await startBenchScript('mcp-upstream.ts', {}, 1)
const gw = await startPinnedGw([process.execPath, ...(process.env.MCP_BENCH_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.MCP_BENCH_PROF}`] : []), join(import.meta.dir, '../src/main.ts')], benchGwEnv('http://127.0.0.1:9', work))
try {
  const admin = (method: string, path: string, body: unknown) =>
    fetch(`${gw.url}/admin/orgs/default${path}`, { method, headers: { authorization: `Bearer ${BENCH_ADMIN}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
  await admin('PUT', '/mcp-servers/bench', { url: `${upstream.url}/mcp` })
  const policy = (await (await fetch(`${gw.url}/admin/orgs/default`, { headers: { authorization: `Bearer ${BENCH_ADMIN}` } })).json()) as { policy: object }
  await admin('PUT', '/policy', { ...policy.policy, mcp: { allowedTools: ['bench__*'], deniedTools: ['bench__delete_*'], requestsPerMinute: 1e8 } })

  const connect = async (url: string, headers: Record<string, string>) => {
    const c = new Client({ name: 'bench', version: '1' })
    await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }))
    return c
  }
  const direct = { name: 'direct', client: await connect(`${upstream.url}/mcp`, {}), tool: 'echo', samples: [] as number[] }
  const viaGw = { name: 'gw', client: await connect(`${gw.url}/mcp`, { authorization: `Bearer ${BENCH_KEY}`, 'x-gw-end-user-id': 'bench' }), tool: 'bench__echo', samples: [] as number[] }
  const call = async (t: typeof direct, keep: boolean) => {
    const start = performance.now()
    await t.client.callTool({ name: t.tool, arguments: { text: 'a short argument, as tools mostly get' } })
    if (keep) t.samples.push(performance.now() - start)
  }
  for (let i = 0; i < WARMUP; i++) {
    await call(direct, false)
    await call(viaGw, false)
  }
  for (let done = 0; done < MEASURED; done += TURN)
    for (const t of [direct, viaGw]) for (let i = 0; i < TURN; i++) await call(t, true)
  const d = percentiles(direct.samples)
  const g = percentiles(viaGw.samples)
  const ms = (x: number) => x.toFixed(3)
  console.log(`tools/call, ${d.n} calls each after ${WARMUP} warm-up calls each`)
  console.log(`direct  p50 ${ms(d.p50)} ms  p99 ${ms(d.p99)} ms`)
  console.log(`via gw  p50 ${ms(g.p50)} ms  p99 ${ms(g.p99)} ms`)
  console.log(`added   p50 ${ms(g.p50 - d.p50)} ms  p99 ${ms(g.p99 - d.p99)} ms`)
  await direct.client.close()
  await viaGw.client.close()
} finally {
  gw.proc.kill('SIGTERM')
  await gw.proc.exited
  upstream.proc.kill()
  rmSync(work, { recursive: true, force: true })
}
