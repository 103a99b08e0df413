// GuessBrake on a fake clock: the delays of wrong tokens, the right one at once, how many are held at a time, one warning a minute.

import { expect, test } from 'bun:test'
import { GuessBrake, HELD_PER_CLIENT, WARN_EVERY_MS } from '../../src/auth/guess-brake'
import { ClientAddresses, trustedProxyProblem } from '../../src/http/client-address'
import { ConfigError, loadConfig } from '../../src/config'

function fakeBrake() {
  let now = 1_000_000
  const slept: number[] = []
  const lines: string[] = []
  const brake = new GuessBrake({
    now: () => now,
    sleep: async (ms) => {
      slept.push(ms)
    },
    warn: (line) => lines.push(line),
  })
  return { brake, slept, lines, advance: (ms: number) => (now += ms) }
}

test('wrong tokens: 5 free, then 100 ms doubling up to 1 s; the right token never waits; 15 quiet minutes forget', async () => {
  const { brake, slept, advance } = fakeBrake()
  for (let i = 0; i < 10; i++) expect(await brake.attempt('a', 'GET /admin/orgs', () => false)).toBe(false)
  expect(slept).toEqual([100, 200, 400, 800, 1000])
  expect(await brake.attempt('a', 'GET /admin/orgs', () => true)).toBe(true)
  expect(slept).toHaveLength(5)
  await brake.attempt('b', 'GET /admin/orgs', () => false) // another client: free
  expect(slept).toHaveLength(5)
  advance(15 * 60_000 + 1)
  await brake.attempt('a', 'GET /admin/orgs', () => false)
  expect(slept).toHaveLength(5)
})

test(`at most ${HELD_PER_CLIENT} wrong tokens of one client are held; the next attempt is not checked until one is answered`, async () => {
  const release: (() => void)[] = []
  const brake = new GuessBrake({ sleep: () => new Promise<void>((r) => release.push(r)), warn: () => {} })
  for (let i = 0; i < 5; i++) await brake.attempt('a', 'x', () => false)
  const held = Array.from({ length: HELD_PER_CLIENT }, () => brake.attempt('a', 'x', () => false))
  await Bun.sleep(1)
  expect(release).toHaveLength(HELD_PER_CLIENT)
  let checked = false
  const next = brake.attempt('a', 'x', () => {
    checked = true
    return true
  })
  await Bun.sleep(1)
  expect(checked).toBe(false)
  release.shift()?.()
  expect(await next).toBe(true)
  expect(checked).toBe(true)
  for (const r of release) r()
  expect(await Promise.all(held)).toEqual(Array(HELD_PER_CLIENT).fill(false))
})

test('one warning line per client a minute, with the count since the last one', async () => {
  const { brake, lines, advance } = fakeBrake()
  for (let i = 0; i < 20; i++) await brake.attempt('10.0.0.1', 'GET /admin/orgs', () => false)
  expect(lines).toHaveLength(1)
  expect(lines[0]).toContain('5 wrong admin tokens from 10.0.0.1 (latest: GET /admin/orgs)')
  advance(WARN_EVERY_MS - 1)
  await brake.attempt('10.0.0.1', 'POST /ui/session', () => false)
  expect(lines).toHaveLength(1)
  advance(1)
  await brake.attempt('10.0.0.1', 'POST /ui/session', () => false)
  expect(lines).toHaveLength(2)
  expect(lines[1]).toContain('17 wrong admin tokens from 10.0.0.1 (latest: POST /ui/session)')
})

test('GW_TRUSTED_PROXIES: IPs and CIDR ranges; anything else stops the start', () => {
  expect(trustedProxyProblem('10.0.0.0/8')).toBeUndefined()
  expect(trustedProxyProblem('::1')).toBeUndefined()
  expect(trustedProxyProblem('fd00::/8')).toBeUndefined()
  for (const bad of ['caddy', '10.0.0.0/33', '10.0.0.1/8/1', '']) expect(trustedProxyProblem(bad)).toContain('GW_TRUSTED_PROXIES')
  expect(loadConfig({ GW_TRUSTED_PROXIES: '172.16.0.0/12, ::1' }).trustedProxies).toEqual(['172.16.0.0/12', '::1'])
  expect(() => loadConfig({ GW_TRUSTED_PROXIES: '10.0.0.1, proxy.local' })).toThrow(ConfigError)
  const addresses = new ClientAddresses(['172.16.0.0/12'])
  const peer = (address: string) => ({ requestIP: () => ({ address }) })
  const req = (xff: string) => new Request('http://gw/admin', { headers: { 'x-forwarded-for': xff } })
  expect(addresses.of(req('1.1.1.1, 203.0.113.5'), peer('172.20.0.3'))).toBe('203.0.113.5')
  expect(addresses.of(req('203.0.113.5, 172.20.0.9'), peer('::ffff:172.20.0.3'))).toBe('203.0.113.5')
  expect(addresses.of(req('203.0.113.5'), peer('192.0.2.1'))).toBe('192.0.2.1')
  expect(addresses.of(req('not-an-ip'), peer('172.20.0.3'))).toBe('172.20.0.3')
})
