// Stores under test with a way to their raw rows: SQLite (in memory, or a database file read by a second
// connection) and a fresh PostgreSQL schema; the store-contract and MCP store tests run against each.

import { Database } from 'bun:sqlite'
import { SQL } from 'bun'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SecretBox } from '../../src/crypto/secret-box'
import { createPostgresStore } from '../../src/store/postgres'
import { createSqliteStore } from '../../src/store/sqlite'
import type { Store } from '../../src/store/types'
import { freshSchema } from './servers'

export interface StoreSubject {
  store: Store
  /** Raw rows of a table, as the database holds them (none for an in-memory SQLite store). */
  raw(table: string): Promise<unknown[]>
  /** Runs a statement on the database directly (not on an in-memory SQLite store). */
  exec(statement: string): Promise<void>
  done(): Promise<void>
}

export async function sqliteSubject(secret: string, onDisk = false): Promise<StoreSubject> {
  if (!onDisk) {
    const store = createSqliteStore(':memory:', new SecretBox(secret))
    return { store, raw: async () => [], exec: async () => {}, done: () => store.close() }
  }
  const dir = mkdtempSync(join(tmpdir(), 'gw-store-subject-'))
  const path = join(dir, 'gw.db')
  const store = createSqliteStore(path, new SecretBox(secret))
  const db = new Database(path)
  return {
    store,
    raw: async (table) => db.query(`SELECT * FROM ${table}`).all(),
    exec: async (statement) => void db.exec(statement),
    async done() {
      db.close()
      await store.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

export async function postgresSubject(secret: string): Promise<StoreSubject> {
  const schema = await freshSchema()
  const store = createPostgresStore(schema.url, new SecretBox(secret))
  await store.whenReady
  const sql = new SQL(schema.url, { max: 1 })
  return {
    store,
    raw: (table) => sql.unsafe(`SELECT * FROM ${table}`),
    exec: async (statement) => void (await sql.unsafe(statement)),
    async done() {
      await store.close()
      await sql.close()
      await schema.drop()
    },
  }
}
