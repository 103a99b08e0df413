// `gw migrate [--from <sqlite file>]`: runs the configured database's migrations alone, and optionally imports a single-node gateway's SQLite file.

import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import type { Config } from '../config'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { SecretBox } from '../crypto/secret-box'
import { importSqlite } from '../store/postgres/import-sqlite'
import { connect, connectionFailure, migratePostgres } from '../store/postgres/open'
import { MIGRATIONS, openDatabase } from '../store/sqlite/open'
import { flag, parseArgs } from './args'

export const MIGRATE_USAGE = `  gw migrate                      (runs the migrations of the configured database, then exits; needs no GW_SECRET)
  gw migrate --from gw.db         (copies a SQLite gateway's orgs, keys, secrets, prompts, users, audit, MCP servers and logs into GW_DATABASE_URL;
                                   resumable and idempotent; secrets opened with GW_SECRET, else the gw.secret beside the file)`

export async function runMigrate(config: Config, argv: string[]): Promise<void> {
  const from = flag(parseArgs(argv), 'from')
  if (!config.databaseUrl) {
    if (from) throw new Error('--from copies into PostgreSQL: set GW_DATABASE_URL (and GW_SECRET)')
    openDatabase(config.dbPath).close()
    console.log(JSON.stringify({ database: 'sqlite', path: resolve(config.dbPath), version: MIGRATIONS.length }, null, 2))
    return
  }
  const sql = connect(config.databaseUrl, 2)
  try {
    const applied = await migratePostgres(sql).catch((err: unknown) => {
      throw new Error(connectionFailure(config.databaseUrl as string, err).message)
    })
    const out: Record<string, unknown> = { database: 'postgres', applied }
    if (from) {
      const source = resolve(from)
      if (!existsSync(source)) throw new Error(`no SQLite file at ${source}`)
      out.imported = await importSqlite(sql, source, sourceSecrets(config.secret as string, source), new SecretBox(config.secret as string))
    }
    console.log(JSON.stringify(out, null, 2))
  } finally {
    await sql.close()
  }
}

/** Opens the file's secrets with GW_SECRET, else with the gw.secret beside the file (a gateway that never set GW_SECRET). */
function sourceSecrets(envSecret: string, source: string): Pick<SecretBox, 'open'> {
  const boxes = [new SecretBox(envSecret)]
  const file = join(dirname(source), 'gw.secret')
  if (existsSync(file)) boxes.push(new SecretBox(readFileSync(file, 'utf8').trim()))
  return {
    open(sealed, boundTo) {
      for (const box of boxes.slice(0, -1))
        try {
          return box.open(sealed, boundTo)
        } catch {}
      return (boxes[boxes.length - 1] as SecretBox).open(sealed, boundTo)
    },
  }
}
