// `gw migrate --from <sqlite file>`: copies a single-node gateway's records and log into PostgreSQL; idempotent and resumable.

import { Database } from 'bun:sqlite'
import type { SQL } from 'bun'
import { type SecretBox, sealedFor } from '../../crypto/secret-box'
import type { LogEntry } from '../../domain/log-entry'
import { mcpSealedFor } from '../../mcp/records'
import { q } from './errors'
import { writeLogBatch } from './logs'

export interface ImportReport {
  /** Rows per table newly written by this run (rows already there are skipped, not counted). */
  copied: Record<string, number>
  /** Log entries read from the file by this run (a resumed run starts after the last batch done). */
  logsRead: number
}

/** A column holding a secret to re-seal (a null one is left null), and what it is bound to. */
interface Sealed {
  column: string
  boundTo: (r: Record<string, unknown>) => string
}

/** Tables copied row for row, parents first; `seal` names the columns holding secrets to re-seal. */
const TABLES: { name: string; key: string[]; seal?: Sealed[] }[] = [
  { name: 'orgs', key: ['id'] },
  {
    name: 'provider_keys',
    key: ['org_id', 'provider', 'name'],
    seal: [{ column: 'api_key_enc', boundTo: (r) => sealedFor.providerKey(String(r.org_id), String(r.provider), String(r.name ?? 'default')) }],
  },
  { name: 'service_keys', key: ['id'] },
  {
    name: 'signing_secrets',
    key: ['org_id', 'kid'],
    seal: [{ column: 'secret_enc', boundTo: (r) => sealedFor.signingSecret(String(r.org_id), String(r.kid)) }],
  },
  { name: 'routes', key: ['org_id', 'name'] },
  { name: 'oidc_configs', key: ['org_id'] },
  { name: 'prompts', key: ['id'] },
  { name: 'prompt_versions', key: ['prompt_id', 'version'] },
  { name: 'prompt_partials', key: ['org_id', 'name'] },
  // The source's roll-ups cover entries it may already have pruned; copied entries do not add to them again.
  { name: 'usage_daily', key: ['org_id', 'dim', 'day', 'value'] },
  // People (PRODUCT §18): users with their password hashes, personal token hashes, and the audit log in its order.
  { name: 'users', key: ['id'] },
  { name: 'admin_tokens', key: ['id'] },
  { name: 'audit_log', key: ['id'] },
  // The MCP gateway (PRODUCT §20): servers (spec and OAuth client sealed), end users' tokens, keys' tool policies.
  // The response cache is not copied: it is refilled by the next answers.
  {
    name: 'mcp_servers',
    key: ['org_id', 'name'],
    seal: [
      { column: 'spec_enc', boundTo: (r) => mcpSealedFor.server(String(r.org_id), String(r.name)) },
      { column: 'oauth_client_enc', boundTo: (r) => mcpSealedFor.client(String(r.org_id), String(r.name)) },
    ],
  },
  {
    name: 'mcp_user_tokens',
    key: ['org_id', 'server', 'end_user'],
    seal: [{ column: 'tokens_enc', boundTo: (r) => mcpSealedFor.userTokens(String(r.org_id), String(r.server), String(r.end_user)) }],
  },
  { name: 'mcp_key_policies', key: ['key_id'] },
]

const LOG_BATCH = 1000

/**
 * Copies every record of the SQLite file at `path` into the (migrated) PostgreSQL database. Secrets
 * are opened with `from` and sealed again with `to`. Rows already present are left as they are, so
 * running it twice changes nothing; the log is copied in batches in time order and the position
 * after each batch is recorded, so an interrupted run resumes where it stopped.
 */
export async function importSqlite(sql: SQL, path: string, from: Pick<SecretBox, 'open'>, to: SecretBox): Promise<ImportReport> {
  const db = new Database(path, { readonly: true, strict: true })
  try {
    const copied: Record<string, number> = {}
    const present = new Set(db.query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'table'").all().map((r) => r.name))
    for (const t of TABLES) {
      if (!present.has(t.name)) continue // a file from an older gw: nothing of that kind to copy
      // Audit entries keep their order: PostgreSQL numbers them again as they come.
      const rows = db.query<Record<string, unknown>, []>(`SELECT * FROM ${t.name}${t.name === 'audit_log' ? ' ORDER BY seq' : ''}`).all()
      copied[t.name] = 0
      for (let i = 0; i < rows.length; i += 500) {
        const batch = rows.slice(i, i + 500).map((r) => toPg(t.name, r, t.seal, from, to))
        const res = await q(sql`INSERT INTO ${sql(t.name)} ${sql(batch)} ON CONFLICT (${sql.unsafe(t.key.join(', '))}) DO NOTHING`)
        copied[t.name] = (copied[t.name] as number) + res.count
      }
    }
    const logsRead = await importLogs(sql, db, path)
    copied.request_logs = logsRead
    return { copied, logsRead }
  } finally {
    db.close()
  }
}

/** A SQLite row as the PostgreSQL table takes it: JSON columns parsed, booleans, bytea, re-sealed secrets. */
function toPg(
  table: string,
  r: Record<string, unknown>,
  seal: (typeof TABLES)[number]['seal'],
  from: Pick<SecretBox, 'open'>,
  to: SecretBox,
): Record<string, unknown> {
  const row = { ...r }
  for (const { column, boundTo } of seal ?? []) if (r[column] != null) row[column] = to.seal(from.open(String(r[column]), boundTo(r)), boundTo(r))
  if (table === 'routes') row.spec = JSON.parse(String(r.spec))
  if (table === 'orgs') row.policy = JSON.parse(String(r.policy))
  if (table === 'provider_keys') row.enabled = r.enabled === 1
  if (table === 'provider_keys' && r.compat != null) row.compat = JSON.parse(String(r.compat))
  if (table === 'service_keys') row.key_hash = Buffer.from(r.key_hash as Uint8Array)
  if (table === 'prompt_versions') row.variables = JSON.parse(String(r.variables))
  if (table === 'service_keys' && r.scopes != null) row.scopes = JSON.parse(String(r.scopes))
  if (table === 'users') row.orgs = JSON.parse(String(r.orgs))
  if (table === 'admin_tokens') row.token_hash = Buffer.from(r.token_hash as Uint8Array)
  if (table === 'audit_log') {
    delete row.seq
    for (const c of ['before_json', 'after_json']) if (r[c] != null) row[c] = JSON.parse(String(r[c]))
  }
  return row
}

interface LogRow {
  entry: string
  created_at: number
  request_id: string
  request_body: string | null
  response_body: string | null
}

async function importLogs(sql: SQL, db: Database, path: string): Promise<number> {
  await q(sql`CREATE TABLE IF NOT EXISTS gw_sqlite_imports (source text PRIMARY KEY, created_at bigint NOT NULL, request_id text NOT NULL)`)
  const [pos] = await q<{ created_at: string; request_id: string }[]>(sql`SELECT created_at, request_id FROM gw_sqlite_imports WHERE source = ${path}`)
  let at = pos ? Number(pos.created_at) : -1
  let id = pos?.request_id ?? ''
  const page = db.query<LogRow, [number, string]>(
    `SELECT l.entry, l.created_at, l.request_id, b.request_body, b.response_body
     FROM request_logs l LEFT JOIN request_log_bodies b ON b.request_id = l.request_id
     WHERE l.created_at > ?1 OR (l.created_at = ?1 AND l.request_id > ?2)
     ORDER BY l.created_at, l.request_id LIMIT ${LOG_BATCH}`,
  )
  let read = 0
  for (;;) {
    const rows = page.all(at, id)
    if (!rows.length) return read
    const entries = rows.map((r) => {
      const e = JSON.parse(r.entry) as LogEntry
      if (r.request_body != null) e.requestBody = JSON.parse(r.request_body)
      if (r.response_body != null) e.responseBody = JSON.parse(r.response_body)
      return e
    })
    const last = rows[rows.length - 1] as LogRow
    await q(
      sql.begin(async (tx) => {
        await writeLogBatch(tx, entries, undefined, true)
        await tx`INSERT INTO gw_sqlite_imports (source, created_at, request_id) VALUES (${path}, ${last.created_at}, ${last.request_id})
                 ON CONFLICT (source) DO UPDATE SET created_at = excluded.created_at, request_id = excluded.request_id`
      }),
    )
    read += rows.length
    at = last.created_at
    id = last.request_id
  }
}
