// Starts a gateway: storage, first-start bootstrap, the HTTP server, and a graceful stop on SIGTERM/SIGINT.

import { resolve } from 'node:path'
import { AdminService } from './admin/admin-service'
import { bootstrap } from './admin/bootstrap'
import { OidcVerifier } from './auth/oidc'
import { createApp } from './app'
import { loadCatalog, readCatalogFile } from './catalog/catalog'
import { type Config, DEFAULT_PROMPTS_DIR } from './config'
import { resolveSecret, SecretBox } from './crypto/secret-box'
import type { Deps } from './pipeline/context'
import { OrgDirectory } from './pipeline/org-directory'
import { type HealthOptions, UpstreamHealth } from './pipeline/upstream-health'
import { MemoryBudgetLedger } from './policy/budget-ledger'
import { MemoryRateLimiter } from './policy/rate-limiter'
import { type LoadReport, loadPromptFiles, readPromptFiles } from './prompts/prompt-files'
import { type LogRetentionOptions, startLogRetention } from './store/log-retention'
import { LogWriter } from './store/log-writer'
import { createSqliteStore } from './store/sqlite'
import type { Store } from './store/types'

/** Opens the configured database; a path that cannot be used fails with a message saying what to do. */
export function openStore(config: Config): Store {
  try {
    const box = new SecretBox(resolveSecret(config.secret, config.dbPath))
    return createSqliteStore(config.dbPath, box)
  } catch (err) {
    const where = config.dbPath === ':memory:' ? 'in memory' : `at ${resolve(config.dbPath)}`
    const why = err instanceof Error ? err.message : String(err)
    throw new Error(
      `cannot use the database ${where}: ${why}. Its directory must exist or be creatable, be writable and have free space; set GW_DB (or --db) to another path.`,
    )
  }
}

export interface Gateway {
  deps: Deps
  admin: AdminService
  url: string
  port: number
  generatedKey: string | undefined
  /** What prompts-as-code loading did; undefined when GW_PROMPTS_DIR names a missing folder. */
  prompts: LoadReport | undefined
  /** Stops accepting, lets in-flight requests finish, writes every pending log entry. */
  stop(): Promise<void>
}

export interface StartOptions {
  fetch?: typeof fetch
  /** Listen (default true); false builds everything but the socket, for tests using app.handle. */
  listen?: boolean
  logWriter?: ConstructorParameters<typeof LogWriter>[1]
  retention?: LogRetentionOptions
  health?: HealthOptions
  /** Seconds of silence after which Bun drops a connection (chat routes lift it per request). */
  idleTimeoutSeconds?: number
}

export async function startGateway(config: Config, opts: StartOptions = {}): Promise<Gateway> {
  const store = openStore(config)
  const catalog = loadCatalog(config.catalogPath ? readCatalogFile(config.catalogPath) : undefined)
  const orgs = new OrgDirectory(store)
  const admin = new AdminService(store, (org) => orgs.invalidate(org))
  const logs = new LogWriter(store.logs, {
    onError: (err, attempt) =>
      console.error(`gw: writing request logs failed (attempt ${attempt}), will retry:`, err instanceof Error ? err.message : err),
    ...opts.logWriter,
  })
  const retention = startLogRetention(store.logs, config.logRetentionDays, {
    onError: (err) => console.error('gw: pruning old log entries failed, will retry:', err instanceof Error ? err.message : err),
    ...opts.retention,
  })
  const deps: Deps = {
    config,
    store,
    catalog,
    logs,
    orgs,
    health: new UpstreamHealth(opts.health),
    limiter: new MemoryRateLimiter(),
    budgets: new MemoryBudgetLedger(),
    oidc: new OidcVerifier(store.auth, { refreshCooldownMs: config.jwksRefreshMs }),
    fetch: opts.fetch ?? fetch,
    openStreams: new Set(),
  }
  const { generatedKey } = await bootstrap(store, admin, config)
  const promptFiles = await readPromptFiles(config.promptsDir, config.promptsDir === DEFAULT_PROMPTS_DIR)
  const prompts = promptFiles && (await loadPromptFiles(store, admin.prompts, promptFiles))
  const app = createApp(deps, admin)
  if (opts.listen !== false)
    app.listen({
      hostname: config.host,
      port: config.port,
      // Slow or silent clients are cut after this; chat routes lift it once their body is read.
      idleTimeout: opts.idleTimeoutSeconds ?? 120,
      // No Bun limit: Bun's own 413 has a bare body. GW_MAX_BODY_BYTES is enforced by gw instead, in
      // readJsonBody (after authentication): a declared Content-Length up front, a chunked body as it streams in.
      maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    })
  const port = app.server?.port ?? config.port
  let stopping: Promise<void> | undefined
  return {
    deps,
    admin,
    port,
    url: `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`,
    generatedKey,
    prompts,
    stop() {
      stopping ??= (async () => {
        const server = app.server
        if (server) {
          // Stop accepting; in-flight requests go on until they finish or the drain time is up.
          const closed = server.stop(false)
          const deadline = performance.now() + config.drainMs
          while (server.pendingRequests > 0 && performance.now() < deadline) await Bun.sleep(20)
          // Streams still open end with the error event and [DONE], and get their log entry.
          for (const end of [...deps.openStreams]) end()
          await Promise.race([closed, Bun.sleep(2000)])
        }
        await retention.stop()
        await logs.close()
        await store.close()
      })()
      return stopping
    },
  }
}
