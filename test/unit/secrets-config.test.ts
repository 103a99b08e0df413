// Operator-given secrets have minimum lengths, and a GW_SERVICE_KEY replaced in the environment is revoked.

import { expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../../src/config'
import { startGateway } from '../../src/server'

test('a GW_SECRET or GW_SERVICE_KEY shorter than 32 characters stops the start with a clear message', () => {
  expect(() => loadConfig({ GW_SECRET: 'short' })).toThrow(/GW_SECRET must be at least 32 characters/)
  expect(() => loadConfig({ GW_SERVICE_KEY: 'gw_sk_short' })).toThrow(/GW_SERVICE_KEY must be at least 32 characters/)
  expect(() => loadConfig({ GW_SERVICE_KEY: 'my-own-service-key-0123456789abcdefghij' })).toThrow(/GW_SERVICE_KEY must start with "gw_sk_"/)
  expect(loadConfig({ GW_SECRET: 's'.repeat(32), GW_SERVICE_KEY: `gw_sk_${'k'.repeat(26)}` }).secret).toBe('s'.repeat(32))
})

test('replacing GW_SERVICE_KEY revokes the previous one on the next start', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-envkey-'))
  const oldKey = `gw_sk_oldkey${'0'.repeat(38)}`
  const newKey = `gw_sk_newkey${'1'.repeat(38)}`
  const start = (key: string) =>
    startGateway(loadConfig({ GW_DB: join(dir, 'gw.db'), GW_PORT: '0', GW_SERVICE_KEY: key, GW_PROMPTS_DIR: '/nonexistent-gw-test-prompts' }))
  const status = async (url: string, key: string) =>
    (await fetch(`${url}/v1/models`, { headers: { authorization: `Bearer ${key}` } })).status
  try {
    const first = await start(oldKey)
    expect(await status(first.url, oldKey)).toBe(200)
    await first.stop()
    const second = await start(newKey)
    expect(await status(second.url, newKey)).toBe(200)
    expect(await status(second.url, oldKey)).toBe(401)
    await second.stop()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
