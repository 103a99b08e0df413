// `bun run test:soak` (second part): 50,000 requests with forged credentials against `gw serve`; fails unless each is a 401 and memory stays flat.
// Forged: signed tokens naming distinct orgs (org-shaped and 8 KB ids), service keys, OIDC tokens of unknown and dead issuers, distinct kids.
// SOAK_FORGED (default 50,000) and SOAK_CONCURRENCY (default 64) size it.

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { processStats } from '../helpers/fault-load'
import { spawnGw } from '../helpers/process'

const TOTAL = Number(process.env.SOAK_FORGED ?? 50_000)
const CONCURRENCY = Number(process.env.SOAK_CONCURRENCY ?? 64)
const ROUND = 5_000
const ADMIN = 'forged-soak-admin-token-0123456789'
const DEAD_ISSUER = 'http://127.0.0.1:9'

const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url')
const jwt = (header: object, claims: object) => `${b64(header)}.${b64(claims)}.${Buffer.from('not a signature').toString('base64url')}`
const now = () => Math.floor(Date.now() / 1000)

/** The i-th forged Authorization header: a different shape and a different name every time. */
function forged(i: number): string {
  const n = i.toString(36)
  switch (i % 6) {
    case 0:
      return `GwSigned ${jwt({ alg: 'HS256', typ: 'JWT' }, { orgId: `org-${n}`, sub: 'x', iat: now(), ttl: 60 })}`
    case 1:
      return `GwSigned ${jwt({ alg: 'HS256', kid: `kid-${n}` }, { orgId: `org-${n}-${'x'.repeat(8_000)}`, sub: 'x', iat: now(), ttl: 60 })}`
    case 2:
      return `GwSigned ${jwt({ alg: 'HS256', kid: `kid-${n}-${'k'.repeat(2_000)}` }, { orgId: 'default', sub: 'x', iat: now(), ttl: 60 })}`
    case 3:
      return `GwKey gw_sk_${n.padStart(12, '0')}${'s'.repeat(32)}`
    case 4:
      return `Bearer ${jwt({ alg: 'RS256', kid: n }, { iss: `https://issuer-${n}.example/${'i'.repeat(4_000)}`, sub: 'x', exp: now() + 60 })}`
    default:
      return `Bearer ${jwt({ alg: 'RS256', kid: n }, { iss: DEAD_ISSUER, sub: 'x', aud: 'gw', exp: now() + 60 })}`
  }
}

const dir = mkdtempSync(join(tmpdir(), 'gw-soak-forged-'))
const gw = await spawnGw({ GW_DB: join(dir, 'gw.db'), GW_ADMIN_TOKEN: ADMIN })
const problems: string[] = []
const samples: number[] = []
try {
  // An org trusting an issuer nobody answers for: every forged token naming it must not cause a fetch each.
  const admin = (method: string, path: string, body: object) =>
    fetch(`${gw.url}/admin${path}`, { method, headers: { authorization: `Bearer ${ADMIN}` }, body: JSON.stringify(body) })
  await admin('POST', '/orgs', { id: 'dead-idp', name: 'dead idp' })
  const put = await admin('PUT', '/orgs/dead-idp/oidc', { issuer: DEAD_ISSUER, audience: 'gw' })
  if (put.status !== 200) throw new Error(`oidc config: ${put.status} ${await put.text()}`)

  const started = performance.now()
  let next = 0
  const statuses = new Map<number, number>()
  const worker = async (end: number) => {
    while (next < end) {
      const i = next++
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: forged(i), 'content-type': 'application/json' },
        body: '{"model":"openai/gpt-4o","messages":[{"role":"user","content":"hi"}]}',
      })
      await res.arrayBuffer()
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
    }
  }
  while (next < TOTAL) {
    const end = Math.min(next + ROUND, TOTAL)
    await Promise.all(Array.from({ length: CONCURRENCY }, () => worker(end)))
    const s = processStats(gw.proc.pid)
    samples.push(s.rssMb)
    console.log(`${end.toString().padStart(7)} forged requests  fds ${s.fds}  rss ${s.rssMb.toFixed(1)} MB  ${JSON.stringify(Object.fromEntries(statuses))}`)
  }
  const secs = (performance.now() - started) / 1000
  console.log(`${TOTAL} forged requests in ${secs.toFixed(1)} s (${(TOTAL / secs).toFixed(0)} req/s)`)
  const other = [...statuses.keys()].filter((s) => s !== 401)
  if (other.length) problems.push(`statuses other than 401: ${other.join(', ')}`)
  // After the first round (pools and JIT warm), memory must stay within the GC sawtooth.
  const base = Math.max(...samples.slice(0, 2))
  const last = samples.at(-1) as number
  if (last > base + 30) problems.push(`RSS grew from ${base.toFixed(1)} MB to ${last.toFixed(1)} MB`)
} finally {
  gw.proc.kill('SIGTERM')
  await gw.proc.exited
  rmSync(dir, { recursive: true, force: true })
}
if (problems.length) {
  console.error(`forged-credential soak FAILED:\n  - ${problems.join('\n  - ')}`)
  process.exit(1)
}
console.log(`forged-credential soak passed: ${TOTAL} requests, all 401, RSS flat`)
