// Starts a gateway: storage, first-start bootstrap, the HTTP server, and a graceful stop on SIGTERM/SIGINT.

import { resolve } from 'node:path'
import { AdminService } from './admin/admin-service'
import { bootstrap, createFirstKey, DEFAULT_ORG, firstKeyNotice } from './admin/bootstrap'
import { OidcVerifier } from './auth/oidc'
import { createApp } from './app'
import { loadCatalog, readCatalogFile } from './catalog/catalog'
import { type Config, ConfigError, DEFAULT_PROMPTS_DIR } from './config'
import { resolveSecret, SecretBox } from './crypto/secret-box'
import type { Deps } from './pipeline/context'
import { AccessLog } from './observability/access-log'
import { GatewayMetrics } from './observability/gateway-metrics'
import { Observer } from './observability/observer'
import { TraceExporter, type ExporterOptions, traceResource } from './observability/trace-exporter'
import { Tracer } from './observability/tracer'
import { OrgDirectory } from './pipeline/org-directory'
import { WaitingAttempts } from './pipeline/5-attempt'
import { PROVIDER_IDS, type ProviderId } from './providers/provider-id'
import { type HealthOptions, UpstreamHealth } from './pipeline/upstream-health'
import { RecentLatency } from './pipeline/route-choice'
import { MemoryBudgetLedger } from './policy/budget-ledger'
import { MemoryRateLimiter } from './policy/rate-limiter'
import { ChangeNotices } from './shared/change-notices'
import { SharedHealth } from './shared/shared-health'
import { RedisBudgetLedger } from './shared/redis-budget-ledger'
import { RedisLink } from './shared/redis-link'
import { RedisRateLimiter } from './shared/redis-rate-limiter'
import { RedisResponseCache } from './shared/redis-response-cache'
import { BodyBudget } from './http/request-context'
import { StreamSlots } from './policy/stream-slots'
import { applyConfigFile, readConfigFile } from './config-file'
import { asActor } from './admin/audit'
import { type LoadReport, loadPromptFiles, readPromptFiles } from './prompts/prompt-files'
import { type LogRetentionOptions, startLogRetention } from './store/log-retention'
import { LogPath, type LogPathOptions } from './store/log-path'
import { LogSpool } from './store/log-spool'
import { claimSpool, type SpoolClaim } from './store/spool-claim'
import { createPostgresStore } from './store/postgres'
import { createSqliteStore } from './store/sqlite'
import type { Store } from './store/types'

/**
 * Opens the configured database: PostgreSQL when GW_DATABASE_URL is set (connected and migrated in
 * the background, see createPostgresStore), else SQLite at GW_DB; a SQLite path that cannot be used
 * fails with a message saying what to do.
 */
export function openStore(config: Config): Store {
  if (config.databaseUrl) {
    let warned = false
    return createPostgresStore(config.databaseUrl, new SecretBox(config.secret as string), {
      onRetry: (err) => {
        if (!warned) console.error(`gw: ${err instanceof Error ? err.message : err}; retrying every second`)
        warned = true
      },
    })
  }
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

/** Connects to Redis (GW_REDIS_URL); gw starts without it (degraded, or 503 for limited requests when required). */
async function connectShared(config: Config): Promise<{ link: RedisLink; notices: ChangeNotices; health: SharedHealth }> {
  const link = new RedisLink(config.redisUrl as string, {
    onDown: (why) =>
      console.error(
        `gw: Redis unreachable (${why}); ${config.redisRequired ? 'limited requests get 503 (GW_REDIS_REQUIRED)' : 'using this instance\'s own rate and budget counters'} until it is back`,
      ),
    onUp: () => console.log('gw: Redis reachable again; shared counters and change notices resume'),
  })
  await link.connect()
  const notices = new ChangeNotices(link, config.redisPrefix)
  return { link, notices, health: new SharedHealth(link, notices, config.redisPrefix) }
}

/**
 * The log path: entries are built and written by a log thread with its own connection (PostgreSQL, or
 * a SQLite file; only a database server can be unreachable, so only it spools); an in-memory SQLite
 * database, which no other thread can open, is written from this thread by the same code, and so is
 * any database when log threads keep dying before they open it (LogPath.thread's fallback).
 */
function openLogPath(config: Config, store: Store, opts: LogPathOptions): LogPath {
  if (config.databaseUrl) {
    const spoolClaim = spoolFolder(resolve(config.spoolDir))
    const spoolDir = spoolClaim.dir
    // The fallback's spool is made only if it is used (a LogSpool reads its folder when made).
    const logs = LogPath.thread({ kind: 'postgres', url: config.databaseUrl, spoolDir }, { ...opts, spoolClaim }, { logs: store.logs, spool: () => new LogSpool(spoolDir) })
    void store.whenReady.then(() => logs.markReady(), () => {})
    return logs
  }
  if (config.dbPath === ':memory:') return LogPath.inProcess(store.logs, opts)
  return LogPath.thread({ kind: 'sqlite', path: resolve(config.dbPath) }, opts, { logs: store.logs })
}

/**
 * This instance's own spool folder: GW_SPOOL_DIR, or one inside it when another instance holds it. A
 * folder gw cannot write (a read-only disk) does not stop the start, as before: it is only needed while
 * the database is unreachable, and is named then.
 */
function spoolFolder(root: string): SpoolClaim {
  try {
    return claimSpool(root)
  } catch (err) {
    console.error(`gw: cannot claim the spool folder ${root} (${err instanceof Error ? err.message : String(err)}): it is used as it is`)
    return { dir: root, release: () => {} }
  }
}

/** How long start-up waits for a database that does not answer before listening without it. */
const STORE_WAIT_MS = 3000

export interface Gateway {
  deps: Deps
  admin: AdminService
  url: string
  port: number
  /** The admin listener's URL when GW_ADMIN_PORT gives it one. */
  adminUrl: string | undefined
  generatedKey: string | undefined
  /** The database was unreachable at start: set-up (and prompt files) wait for it. */
  waitingForStore: boolean
  /** Providers the `default` org has an enabled key for (or, OpenAI-compatible, an enabled record), at start. */
  providers: string[]
  /** What prompts-as-code loading did; undefined when GW_PROMPTS_DIR names a missing folder. */
  prompts: LoadReport | undefined
  /** Stops accepting, lets in-flight requests finish, writes every pending log entry. */
  stop(): Promise<void>
}

export interface StartOptions {
  fetch?: typeof fetch
  /** Listen (default true); false builds everything but the socket, for tests using app.handle. */
  listen?: boolean
  logWriter?: Partial<LogPathOptions>
  retention?: LogRetentionOptions
  health?: HealthOptions
  traceExporter?: ExporterOptions
  /** Seconds of silence after which Bun drops a connection (chat routes lift it per request). */
  idleTimeoutSeconds?: number
}

/** Codes of a listen that failed because of its host. */
const HOST_ERRORS = new Set(['EINVAL', 'EADDRNOTAVAIL', 'ENOENT', 'ENOTFOUND', 'EAI_NONAME', 'EAI_AGAIN', 'EAI_FAIL'])

/**
 * Listens on the configured port, alone: Elysia turns SO_REUSEPORT on by default, which lets a second
 * gw share a port with the first and split its requests (PRODUCT §4). A taken port fails the start.
 */
function listen(
  app: ReturnType<typeof createApp>,
  at: { host: string; port: number; portVar: string; hostVar: string },
  idleTimeoutSeconds: number | undefined,
  dev: boolean,
): void {
  try {
    app.listen({
      hostname: at.host,
      port: at.port,
      reusePort: false,
      // Slow or silent clients are cut after this; chat routes lift it once their body is read.
      idleTimeout: idleTimeoutSeconds ?? 120,
      // No Bun limit: Bun's own 413 has a bare body. GW_MAX_BODY_BYTES is enforced by gw instead, in
      // readJsonBody (after authentication): a declared Content-Length up front, a chunked body as it streams in.
      maxRequestBodySize: Number.MAX_SAFE_INTEGER,
      // The dashboard's bundle: rebuilt on change with hot reload under `npm run dev`, built once otherwise.
      development: dev ? { hmr: true, console: true } : false,
    })
  } catch (err) {
    const code = typeof err === 'object' && err !== null && 'code' in err ? (err as { code: unknown }).code : undefined
    if (code === 'EADDRINUSE')
      throw new Error(`port ${at.port} on ${at.host} is already in use (another gw, or another program): stop it, or set ${at.portVar} to a free port`)
    // A misspelt name (`localhostt`) or an address this machine does not have: Bun says only "EINVAL:
    // invalid argument, listen" (or EADDRNOTAVAIL, ENOENT, … depending on the resolver).
    if (typeof code === 'string' && HOST_ERRORS.has(code))
      throw new Error(
        `cannot listen on host "${at.host.slice(0, 255)}" (${at.hostVar}): it is neither an address of this machine nor a name resolving to one (${code}); use 127.0.0.1, 0.0.0.0 (every interface) or one of this machine's addresses`,
      )
    throw err
  }
}

export async function startGateway(config: Config, opts: StartOptions = {}): Promise<Gateway> {
  // A bad GW_CONFIG stops the start before anything is opened.
  const configured = config.configFile ? readConfigFile(config.configFile) : []
  const store = openStore(config)
  const catalog = loadCatalog(config.catalogPath ? readCatalogFile(config.catalogPath) : undefined)
  const orgs = new OrgDirectory(store)
  const shared = config.redisUrl ? await connectShared(config) : undefined
  const health = new UpstreamHealth({ ...opts.health, ...(shared ? { onShared: (event) => shared.health.share(event) } : {}) })
  const admin = new AdminService(store, (org) => {
    orgs.invalidate(org)
    shared?.notices.publish({ kind: 'org', orgId: org })
  })
  await shared?.notices.listen({
    org: (id) => orgs.invalidate(id),
    health: (e) => health.applyShared(e),
    missed: () => orgs.invalidateAll(),
  })
  // What the other instances saw before this one listened (cool-downs, benched keys, open breakers).
  if (shared) for (const e of await shared.health.recall()) health.applyShared(e)
  const logs = openLogPath(config, store, {
    bodyMaxBytes: config.logBodyMaxBytes,
    onError: (err, attempt) =>
      console.error(`gw: writing request logs failed (attempt ${attempt}), will retry:`, err instanceof Error ? err.message : err),
    quiet: () => metrics.inFlight <= 2,
    // A SQLite store's response cache (not Redis) has its puts written by the log thread with the entries.
    ...(!shared && store.cache.keptByLog ? { cache: store.cache.keptByLog } : {}),
    ...opts.logWriter,
  })
  const auditRetention = startLogRetention({ pruneLogs: (before, n) => store.audit.prune(before, n) }, config.auditRetentionDays, {
    onError: (err) => console.error('gw: pruning old audit log entries failed, will retry:', err instanceof Error ? err.message : err),
    ...opts.retention,
  })
  const retention = startLogRetention(store.logs, config.logRetentionDays, {
    onError: (err) => console.error('gw: pruning old log entries failed, will retry:', err instanceof Error ? err.message : err),
    ...opts.retention,
  })
  const exporter = config.otel && new TraceExporter(config.otel, traceResource(config.otel), opts.traceExporter)
  const metrics = new GatewayMetrics(
    catalog,
    {
      logs: () => ({ queued: logs.queued, ...logs.stats }),
      openCircuits: () => health.openCircuits(),
      traces: () => exporter?.stats ?? { exported: 0, dropped: 0, failedExports: 0 },
    },
    { orgLabel: config.metricsOrgLabel },
  )
  const observer = exporter
    ? new Observer(metrics, new AccessLog(config.logFormat), new Tracer(exporter), config.traceContent, () => exporter.close())
    : new Observer(metrics, new AccessLog(config.logFormat))
  const deps: Deps = {
    config,
    store,
    catalog,
    logs,
    orgs,
    health,
    limiter: shared ? new RedisRateLimiter(shared.link, { required: config.redisRequired, prefix: `${config.redisPrefix}rl:` }) : new MemoryRateLimiter(),
    observer,
    streams: new StreamSlots(config.upstreamPool),
    bodies: new BodyBudget(config.maxInflightBodyBytes),
    budgets: shared ? new RedisBudgetLedger(shared.link, { required: config.redisRequired, prefix: `${config.redisPrefix}budget:` }) : new MemoryBudgetLedger(),
    latency: new RecentLatency(),
    cache: shared ? new RedisResponseCache(shared.link, `${config.redisPrefix}cache:`) : store.cache,
    ...(shared ? { shared: shared.link } : {}),
    oidc: new OidcVerifier(store.auth, { refreshCooldownMs: config.jwksRefreshMs }),
    fetch: opts.fetch ?? fetch,
    inFlight: new Set(),
    waiting: new WaitingAttempts(),
  }
  const setUp = async () => {
    // Stored keys that this GW_SECRET cannot open would fail every request of their orgs: the start stops here instead.
    await store.orgs.openOneKey().catch((err: unknown) => {
      throw new ConfigError(
        `GW_SECRET does not open the provider keys stored in the database (${err instanceof Error ? err.message : err}): start gw with the secret they were sealed with (GW_SECRET, or the gw.secret file beside a SQLite database)`,
      )
    })
    await bootstrap(store, config, admin.audit)
    await applyConfigFile(store, configured, admin.audit)
    const order = (p: string) => (PROVIDER_IDS as readonly string[]).indexOf(p) >>> 0
    const providers = [...new Set((await store.orgs.getProviders(DEFAULT_ORG)).filter((p) => p.enabled && (p.apiKey || p.compat)).map((p) => p.provider))].sort(
      (a, b) => order(a) - order(b) || a.localeCompare(b),
    )
    const promptFiles = await readPromptFiles(config.promptsDir, config.promptsDir === DEFAULT_PROMPTS_DIR)
    const prompts = promptFiles && (await asActor({ kind: 'config-file' }, () => loadPromptFiles(store, admin.prompts, promptFiles)))
    return { providers, prompts }
  }
  // A database down at start does not keep gw from listening (live 200, ready 503): the first-start
  // set-up runs once it is reachable, and log entries wait in the spool meanwhile.
  const reachable =
    store.ready ||
    (await Promise.race([store.whenReady.then(() => true), Bun.sleep(STORE_WAIT_MS).then(() => false)]).catch(async (err: unknown) => {
      // A database retrying cannot reach (no such database, a refused login) stops the start.
      await retention.stop()
      await auditRetention.stop()
      await logs.close()
      await store.close()
      shared?.link.close()
      throw err
    }))
  const waitingForStore = !reachable
  const { providers, prompts } = reachable ? await setUp() : { providers: [], prompts: undefined }
  const split = config.adminListener
  const app = createApp(deps, admin, split ? 'public' : 'all')
  const adminApp = split ? createApp(deps, admin, 'admin') : undefined
  let generatedKey: string | undefined
  try {
    if (opts.listen !== false) {
      listen(app, { host: config.host, port: config.port, portVar: 'GW_PORT (or --port)', hostVar: 'GW_HOST or --host' }, opts.idleTimeoutSeconds, config.dev)
      if (split && adminApp) listen(adminApp, { ...split, portVar: 'GW_ADMIN_PORT', hostVar: 'GW_ADMIN_HOST' }, opts.idleTimeoutSeconds, config.dev)
    }
    // Only now, once gw listens: a start that fails before this leaves no key nobody was shown.
    // The first start's key is made by `gw serve`, run from the command line: the CLI, in the audit log.
    if (reachable) generatedKey = await asActor({ kind: 'cli' }, () => createFirstKey(store, admin, config))
  } catch (err) {
    await app.server?.stop(true)
    await adminApp?.server?.stop(true)
    await logs.close()
    await store.close()
    throw err
  }
  const port = app.server?.port ?? config.port
  const hostUrl = (host: string, p: number) => `http://${host.includes(':') ? `[${host}]` : host}:${p}`
  if (waitingForStore)
    void store.whenReady
      .then(setUp)
      .then(() => createFirstKey(store, admin, config))
      .then((key) => {
        console.log('gw: the database is reachable; first-start set-up done')
        if (key) console.log(firstKeyNotice(key, hostUrl(config.host, port), config.logFormat === 'json'))
      })
      .catch((err: unknown) => console.error('gw: first-start set-up failed:', err instanceof Error ? err.message : err))
  let stopping: Promise<void> | undefined
  return {
    deps,
    admin,
    port,
    url: hostUrl(config.host, port),
    adminUrl: split && adminApp?.server ? hostUrl(split.host, adminApp.server.port ?? split.port) : undefined,
    generatedKey,
    waitingForStore,
    providers,
    prompts,
    stop() {
      stopping ??= (async () => {
        const server = app.server
        if (server) {
          // Stop accepting; in-flight requests go on until they finish or the drain time is up.
          const closed = server.stop(false)
          const deadline = performance.now() + config.drainMs
          while (server.pendingRequests > 0 && performance.now() < deadline) await Bun.sleep(20)
          // What is still in flight ends now: a request waiting for its answer with a 503, a stream with
          // the error event and [DONE]; each gets its log entry.
          deps.waiting.stopAll()
          for (const end of [...deps.inFlight]) end()
          await Promise.race([closed, Bun.sleep(2000)])
        }
        await adminApp?.server?.stop(true)
        await retention.stop()
        await auditRetention.stop()
        await logs.close()
        await deps.observer.close()
        await store.close()
        shared?.link.close()
      })()
      return stopping
    },
  }
}
