// The SQLite store: migrations, WAL, encrypted secrets, and log queries that use indexes, not scans.

import { describe, expect, test } from 'bun:test'
import { Database, type SQLQueryBindings } from 'bun:sqlite'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { createCipheriv, createHash, randomBytes } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SecretBox, sealedFor } from '../../src/crypto/secret-box'
import { encodeCursor } from '../../src/store/log-cursor'
import { createSqliteStore } from '../../src/store/sqlite'
import { SqliteLogStore } from '../../src/store/sqlite/logs'
import type { LogQuery } from '../../src/store/types'
import { MIGRATIONS, migrate, openDatabase } from '../../src/store/sqlite/open'
import { PG_MIGRATIONS } from '../../src/store/postgres/open'
import { logEntry as entry } from '../helpers/log-entry'

test('a fresh database gets every migration once; running them again changes nothing', () => {
  const db = openDatabase(':memory:')
  expect((db.query('PRAGMA user_version').get() as { user_version: number }).user_version).toBe(MIGRATIONS.length)
  migrate(db)
  expect((db.query('PRAGMA user_version').get() as { user_version: number }).user_version).toBe(MIGRATIONS.length)
  db.close()
})

test('each store applies every migration file, in the order of the numbers their names start with (1, 2, … without gaps)', () => {
  for (const [store, list] of [['sqlite', MIGRATIONS], ['postgres', PG_MIGRATIONS]] as const) {
    const dir = join(import.meta.dir, `../../src/store/${store}/migrations`)
    const files = readdirSync(dir).filter((f) => f.endsWith('.sql')).sort()
    expect(files.map((f) => Number(f.slice(0, 4)))).toEqual(files.map((_, i) => i + 1))
    expect(list).toEqual(files.map((f) => readFileSync(join(dir, f), 'utf8')))
  }
})

test('a file database runs in WAL mode', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-store-'))
  try {
    const db = openDatabase(join(dir, 'nested/gw.db'))
    expect((db.query('PRAGMA journal_mode').get() as { journal_mode: string }).journal_mode).toBe('wal')
    db.close()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('a file database: a worker thread copies the WAL into the file, the connections serving requests do not', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-store-'))
  const path = join(dir, 'gw.db')
  try {
    const store = createSqliteStore(path, new SecretBox('s'))
    const before = statSync(path).size
    // About 1 MB of entries: under SQLite's own 1,000-page automatic checkpoint, so only the thread copies it.
    const body = { messages: [{ role: 'user', content: 'x'.repeat(1000) }] }
    await store.logs.insertLogs(Array.from({ length: 1000 }, (_, i) => entry(i, { requestBody: body })))
    expect(statSync(path).size).toBe(before) // the insert itself left it all in the WAL
    const deadline = performance.now() + 10_000
    // PASSIVE checkpoints may copy the pages over several rounds: wait for all of them.
    while (statSync(path).size <= before + 1_000_000 && performance.now() < deadline) await Bun.sleep(25)
    expect(statSync(path).size).toBeGreaterThan(before + 1_000_000)
    expect(await store.logs.countLogs()).toBe(1000)
    await store.close()
    // The thread closed its connection too: the last close removed the WAL.
    expect(existsSync(`${path}-wal`)).toBe(false)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('provider keys are sealed with AES-256-GCM and opened only with the same secret', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-store-'))
  const path = join(dir, 'gw.db')
  try {
    const store = createSqliteStore(path, new SecretBox('secret-one'))
    await store.orgs.createOrg({ id: 'o1', name: 'O' })
    await store.orgs.putProvider('o1', { provider: 'openai', name: 'default', weight: 1, apiKey: 'sk-plain-text-key', baseUrl: undefined, enabled: true })
    expect((await store.orgs.getProviders('o1'))[0]?.apiKey).toBe('sk-plain-text-key')
    await store.close()
    const raw = new Database(path, { readonly: true })
    const row = raw.query('SELECT api_key_enc FROM provider_keys').get() as { api_key_enc: string }
    raw.close()
    expect(row.api_key_enc).not.toContain('sk-plain-text-key')
    expect(row.api_key_enc).toMatch(/^v2:/)
    const wrong = createSqliteStore(path, new SecretBox('secret-two'))
    await expect(wrong.orgs.getProviders('o1')).rejects.toThrow(/GW_SECRET/)
    await wrong.close()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('a sealed value is bound to its row: copied into another org or provider, it does not open', async () => {
  const store = createSqliteStore(':memory:', new SecretBox('secret-one-0123456789-0123456789'))
  for (const id of ['o1', 'o2']) await store.orgs.createOrg({ id, name: id })
  await store.orgs.putProvider('o1', { provider: 'openai', name: 'default', weight: 1, apiKey: 'sk-org-one', baseUrl: undefined, enabled: true })
  await store.orgs.putProvider('o2', { provider: 'openai', name: 'default', weight: 1, apiKey: 'sk-org-two', baseUrl: undefined, enabled: true })
  await store.orgs.putProvider('o2', { provider: 'mistral', name: 'default', weight: 1, apiKey: 'mi-org-two', baseUrl: undefined, enabled: true })
  const box = new SecretBox('secret-one-0123456789-0123456789')
  const sealed = box.seal('sk-org-one', 'provider_keys/o1/openai')
  expect(box.open(sealed, 'provider_keys/o1/openai')).toBe('sk-org-one')
  expect(() => box.open(sealed, 'provider_keys/o2/openai')).toThrow(/moved from another row/)
  expect(() => box.open(sealed, 'provider_keys/o1/mistral')).toThrow(/moved from another row/)
  await store.close()
})

test('secrets stored in the v1 format are rewritten as v2 (salted HKDF, bound to the row) when the store opens', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-store-'))
  const path = join(dir, 'gw.db')
  const secret = 'legacy-secret-0123456789-0123456789'
  // The v1 format, written the way the previous release did: AES-256-GCM under SHA-256("gw-secret-box:" + secret).
  const sealV1 = (plain: string) => {
    const key = createHash('sha256').update(`gw-secret-box:${secret}`).digest()
    const iv = randomBytes(12)
    const c = createCipheriv('aes-256-gcm', key, iv)
    const ct = Buffer.concat([c.update(plain, 'utf8'), c.final()])
    return `v1:${iv.toString('base64')}:${c.getAuthTag().toString('base64')}:${ct.toString('base64')}`
  }
  try {
    const first = createSqliteStore(path, new SecretBox(secret))
    await first.orgs.createOrg({ id: 'o1', name: 'O' })
    await first.orgs.putProvider('o1', { provider: 'anthropic', name: 'default', weight: 1, apiKey: 'placeholder', baseUrl: undefined, enabled: true })
    await first.auth.addSigningSecret({ orgId: 'o1', kid: 'k1', secret: 'placeholder' })
    await first.close()
    const raw = new Database(path)
    raw.query('UPDATE provider_keys SET api_key_enc = ?1').run(sealV1('sk-ant-legacy'))
    raw.query('UPDATE signing_secrets SET secret_enc = ?1').run(sealV1('signing-legacy'))
    raw.close()

    const store = createSqliteStore(path, new SecretBox(secret))
    expect((await store.orgs.getProviders('o1'))[0]?.apiKey).toBe('sk-ant-legacy')
    expect((await store.auth.listSigningSecrets('o1'))[0]?.secret).toBe('signing-legacy')
    await store.close()
    const after = new Database(path, { readonly: true })
    const enc = [
      (after.query('SELECT api_key_enc AS e FROM provider_keys').get() as { e: string }).e,
      (after.query('SELECT secret_enc AS e FROM signing_secrets').get() as { e: string }).e,
    ]
    after.close()
    for (const e of enc) expect(e).toMatch(/^v2:[^:]+:[^:]+:[^:]+:[^:]+$/)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

describe('request log', () => {
  test('metadata filters are index seeks, not scans of the log', () => {
    const db = openDatabase(':memory:')
    const plan = (sql: string) =>
      (db.query(`EXPLAIN QUERY PLAN ${sql}`).all() as { detail: string }[]).map((r) => r.detail).join('\n')
    const twoKeys = plan(`SELECT l.entry FROM request_log_metadata m0 JOIN request_logs l ON l.request_id = m0.request_id
      WHERE m0.org_id = 'o1' AND m0.key = 'env' AND m0.value = 'prod'
      AND EXISTS (SELECT 1 FROM request_log_metadata m1 WHERE m1.org_id = m0.org_id AND m1.key = 'shard' AND m1.value = '1'
                  AND m1.created_at = m0.created_at AND m1.request_id = m0.request_id)
      ORDER BY m0.created_at DESC, m0.request_id DESC LIMIT 51`)
    expect(twoKeys).not.toMatch(/SCAN (l|request_logs)\b/)
    expect(twoKeys).not.toContain('USE TEMP B-TREE')
    expect(twoKeys).toMatch(/SEARCH m0 USING PRIMARY KEY/)
    const byId = plan(`SELECT entry FROM request_logs WHERE request_id = 'x' AND org_id = 'o1'`)
    expect(byId).toMatch(/SEARCH request_logs USING INDEX sqlite_autoindex_request_logs_1/)
    db.close()
  })

  test('every filter of a log page reads its own index range, never a scan of the log', async () => {
    const db = openDatabase(':memory:')
    // The statements the store runs, as it runs them (the read thread's connection would get the same).
    const ran: { sql: string; args: SQLQueryBindings[] }[] = []
    const logs = new SqliteLogStore(db, db, {
      async all<T>(sql: string, args: SQLQueryBindings[]) {
        ran.push({ sql, args })
        return db.query<T, SQLQueryBindings[]>(sql).all(...args)
      },
    })
    const cursor = encodeCursor(1_700_000_000_000, 'req-x')
    const cases: [Partial<LogQuery>, RegExp][] = [
      [{}, /SEARCH t USING COVERING INDEX request_logs_org_time \(org_id=\?\)/],
      [{ since: 1, until: 2 }, /SEARCH t USING COVERING INDEX request_logs_org_time \(org_id=\? AND created_at>\? AND created_at<\?\)/],
      // A page deep in the log starts at its cursor, not at the newest entry.
      [{ cursor }, /SEARCH t USING COVERING INDEX request_logs_org_time \(org_id=\? AND created_at<\?\)/],
      [{ user: 'u', cursor }, /SEARCH t USING COVERING INDEX request_logs_org_user \(org_id=\? AND end_user_id=\? AND created_at<\?\)/],
      [{ model: 'm' }, /SEARCH t USING COVERING INDEX request_logs_org_model \(org_id=\? AND model=\?\)[^]*SEARCH t USING COVERING INDEX request_logs_org_requested_model \(org_id=\? AND requested_model=\?\)/],
      [{ status: 404 }, /SEARCH t USING COVERING INDEX request_logs_org_status \(org_id=\? AND status=\?\)/],
      [{ status: 'error' }, /SEARCH t USING COVERING INDEX request_logs_org_failed \(org_id=\? AND <expr>=\?\)/],
      [{ status: 'success', since: 1 }, /SEARCH t USING COVERING INDEX request_logs_org_failed \(org_id=\? AND <expr>=\? AND created_at>\?\)/],
      [{ user: 'u', model: 'm', status: 'error' }, /SEARCH t USING COVERING INDEX request_logs_org_user \(org_id=\? AND end_user_id=\?\)/],
      [{ provider: 'openai' }, /SEARCH t USING COVERING INDEX request_logs_org_time \(org_id=\?\)/],
      [{ metadata: [['env', 'prod'], ['shard', '1']], model: 'm' }, /SEARCH m USING PRIMARY KEY \(org_id=\? AND key=\? AND value=\?\)/],
    ]
    for (const [filter, driver] of cases) {
      ran.length = 0
      await logs.queryLogs({ orgId: 'o1', metadata: [], limit: 50, ...filter })
      // The page, then (it came back short: the table is empty) the window's edge.
      expect(ran.length).toBe(2)
      for (const { sql, args } of ran) {
        const plan = (db.query(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as { detail: string }[]).map((r) => r.detail).join('\n')
        expect({ filter, plan }).toEqual({ filter, plan: expect.stringMatching(driver) })
        expect({ filter, plan }).toEqual({ filter, plan: expect.not.stringMatching(/SCAN (t|l|m|request_logs)\b/) })
        expect({ filter, plan }).toEqual({ filter, plan: expect.not.stringMatching(/SEARCH l USING INDEX (?!sqlite_autoindex_request_logs_1)/) })
      }
    }
    db.close()
  })
})

test('keys stored before keys had names become the key named "default", and still open', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-store-'))
  const path = join(dir, 'gw.db')
  try {
    const box = new SecretBox('names-migration-secret-0123456789')
    const db = new Database(path, { create: true, strict: true })
    for (const m of MIGRATIONS.slice(0, 5)) db.exec(m)
    db.exec('PRAGMA user_version = 5')
    db.exec("INSERT INTO orgs (id, name, created_at) VALUES ('o1', 'O', '2026-01-01T00:00:00Z')")
    db.query('INSERT INTO provider_keys (org_id, provider, api_key_enc, base_url, enabled, updated_at) VALUES (?1, ?2, ?3, ?4, 1, ?5)').run(
      'o1', 'openai', box.seal('sk-before-names-1234', sealedFor.providerKey('o1', 'openai')), 'https://example.test/v1', '2026-01-01T00:00:00Z',
    )
    db.close()
    const store = createSqliteStore(path, box)
    expect(await store.orgs.getProviders('o1')).toEqual([
      expect.objectContaining({ provider: 'openai', name: 'default', weight: 1, apiKey: 'sk-before-names-1234', baseUrl: 'https://example.test/v1' }),
    ])
    // A key of another name is bound to its own name: its sealed value does not open as "default".
    await store.orgs.putProvider('o1', { provider: 'openai', name: 'spare', weight: 1, apiKey: 'sk-spare-5678', baseUrl: undefined, enabled: true })
    await store.close()
    const raw = new Database(path, { readonly: true })
    const spare = raw.query("SELECT api_key_enc AS enc FROM provider_keys WHERE name = 'spare'").get() as { enc: string }
    raw.close()
    expect(() => box.open(spare.enc, sealedFor.providerKey('o1', 'openai'))).toThrow()
    expect(box.open(spare.enc, sealedFor.providerKey('o1', 'openai', 'spare'))).toBe('sk-spare-5678')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
