// The admission settings as gw reads them at start: the upstream pool Bun was given, and the bytes bodies in flight may hold.

import { expect, test } from 'bun:test'
import { loadConfig } from '../../src/config'
import { StreamSlots } from '../../src/policy/stream-slots'

test('the upstream pool is read as Bun reads BUN_CONFIG_MAX_HTTP_REQUESTS (a whole number 1-65535, else 256), and the stream caps follow it', () => {
  const pool = (v?: string) => loadConfig(v === undefined ? {} : { BUN_CONFIG_MAX_HTTP_REQUESTS: v }).upstreamPool
  expect([pool(), pool('4096'), pool('8'), pool('0'), pool('abc'), pool('100000'), pool('65535')]).toEqual([256, 4096, 8, 256, 256, 256, 65535])
  expect(new StreamSlots(pool()).caps).toEqual({ instance: 192, org: 96, key: 48 })
  expect(new StreamSlots(pool('4096')).caps).toEqual({ instance: 3072, org: 1536, key: 768 })
  expect(new StreamSlots(1).caps).toEqual({ instance: 1, org: 1, key: 1 })
})

test('GW_MAX_INFLIGHT_BODY_BYTES: 256 MiB, at least one body of GW_MAX_BODY_BYTES; set below it, the start fails', () => {
  expect(loadConfig({}).maxInflightBodyBytes).toBe(256 * 1024 * 1024)
  expect(loadConfig({ GW_MAX_BODY_BYTES: String(512 * 1024 * 1024) }).maxInflightBodyBytes).toBe(512 * 1024 * 1024)
  expect(loadConfig({ GW_MAX_INFLIGHT_BODY_BYTES: '20000000' }).maxInflightBodyBytes).toBe(20_000_000)
  expect(() => loadConfig({ GW_MAX_INFLIGHT_BODY_BYTES: '1000000' })).toThrow(/GW_MAX_INFLIGHT_BODY_BYTES \(1000000\) must be at least GW_MAX_BODY_BYTES/)
})
