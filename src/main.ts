#!/usr/bin/env bun
// Entry point of the `gw` binary: `gw serve` (the default) or an admin subcommand.

import pkg from '../package.json' with { type: 'json' }
import { ADMIN_USAGE, runAdminCommand, UsageError } from './cli/admin-commands'
import { CONFIG_FLAGS, ConfigError, type Env, loadConfig, misspeltSettings, parseFlags } from './config'
import { MIGRATE_USAGE, runMigrate } from './cli/migrate'
import { startupLines, startupSummary } from './observability/startup-summary'
import { firstKeyNotice } from './admin/bootstrap'
import { startGateway } from './server'
import { SETTINGS_HELP } from './settings'
import { openFoldersWarning } from './store/private-folder'
import { dirname } from 'node:path'

const HEALTHCHECK_USAGE = 'gw healthcheck        (exit 0 when the gateway on GW_HOST:GW_PORT answers /health; the Docker HEALTHCHECK)'

/** Every setting: its flag (any command takes them), its variable, what it does, its kind and default. */
const SETTINGS_USAGE = `settings: each is read from its environment variable (an empty one is unset); its flag, if it has one, overrides it:
${SETTINGS_HELP}
Also read: the standard OTEL_* variables (OTLP trace export) and NODE_ENV=development (\`npm run dev\`).`

const SERVE_USAGE = `gw [serve] [configuration flags]

${SETTINGS_USAGE}`

const USAGE = `gw ${pkg.version} — self-hosted AI gateway

  gw [serve] [configuration flags]        (gw serve --help lists them)
  gw --version
  ${HEALTHCHECK_USAGE}
${ADMIN_USAGE}
${MIGRATE_USAGE}

The dashboard is at /ui when GW_ADMIN_TOKEN is set.

${SETTINGS_USAGE}`

/** Asks the local gateway's /health (a wildcard listen address is reached on loopback); sets the exit code. */
async function healthcheck(config: ReturnType<typeof loadConfig>): Promise<void> {
  const wildcard: Record<string, string> = { '0.0.0.0': '127.0.0.1', '::': '::1' }
  const host = wildcard[config.host] ?? config.host
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${config.port}/health`
  const res = await fetch(url, { signal: AbortSignal.timeout(4000) }).catch(() => undefined)
  if (res?.status === 200) {
    console.log(`gw: healthy (${url})`)
    return
  }
  console.error(`gw: unhealthy: ${url} ${res ? `answered ${res.status}` : 'did not answer'}`)
  process.exitCode = 1
}

async function serve(env: Env): Promise<void> {
  const config = loadConfig(env)
  // With GW_LOG_FORMAT=json every line gw prints is one JSON object, so log shippers can read stdout whole.
  const json = config.logFormat === 'json'
  const say = (msg: string, extra: Record<string, unknown> = {}) =>
    console.log(json ? JSON.stringify({ time: new Date().toISOString(), msg, ...extra }) : `gw: ${msg}`)
  const warn = (msg: string) => (json ? say(msg, { level: 'warn' }) : console.error(`gw: ${msg}`))
  for (const line of misspeltSettings(env)) warn(line)
  const gw = await startGateway(config)
  for (const line of startupLines(config, startupSummary(config, { url: gw.url, adminUrl: gw.adminUrl, providers: gw.providers }))) console.log(line)
  // The folders gw keeps data in: the SQLite database's, or the spool beside PostgreSQL.
  const folders = config.databaseUrl ? [config.spoolDir] : config.dbPath === ':memory:' ? [] : [dirname(config.dbPath)]
  const openFolders = openFoldersWarning(folders)
  if (openFolders) warn(openFolders)
  if (gw.waitingForStore) warn('the database is unreachable; serving starts now, set-up and log writes follow when it is back')
  else if (!gw.prompts) warn(`GW_PROMPTS_DIR "${config.promptsDir}" does not exist: no prompt files loaded`)
  else {
    const p = gw.prompts
    if (p.prompts + p.partials)
      say(`prompt files: ${p.prompts} prompts, ${p.partials} partials (${p.newVersions} new versions, ${p.published} published)`)
    for (const why of p.skipped) warn(`prompt file skipped, ${why}`)
  }
  if (gw.generatedKey) console.log(firstKeyNotice(gw.generatedKey, gw.url, json))
  let signals = 0
  const shutdown = async (signal: string) => {
    if (signals++) return
    say(`${signal} received, finishing in-flight requests and writing logs…`)
    await gw.stop()
    say('stopped')
    process.exit(0)
  }
  process.on('SIGTERM', () => void shutdown('SIGTERM'))
  process.on('SIGINT', () => void shutdown('SIGINT'))
}

async function main(argv: string[]): Promise<void> {
  const { overrides, rest } = parseFlags(argv)
  const [first = 'serve', ...args] = rest
  if (first === 'help' || first === '--help' || first === '-h') return void console.log(USAGE)
  if (first === 'version' || first === '--version' || first === '-v') return void console.log(`gw ${pkg.version}`)
  // `gw --prot 1` is `gw serve --prot 1`: an unknown flag, not an unknown command.
  if (first === 'serve' || first.startsWith('-')) {
    const serveArgs = first === 'serve' ? args : rest
    if (serveArgs.includes('--help') || serveArgs.includes('-h')) return void console.log(`usage: ${SERVE_USAGE}`)
    const extra = serveArgs[0]
    if (extra !== undefined)
      throw new UsageError(`${extra.startsWith('-') ? 'unknown flag' : 'unexpected argument'} "${extra.split('=')[0]}" for "gw serve"\n\nusage: ${SERVE_USAGE}`)
    return serve({ ...process.env, ...overrides })
  }
  const migratesOnly = first === 'migrate' && !args.some((a) => /^--from(=|$)/.test(a))
  const config = loadConfig({ ...process.env, ...overrides }, { secretOptional: migratesOnly })
  if (first === 'healthcheck') {
    if (args.includes('--help') || args.includes('-h')) return void console.log(`usage: ${HEALTHCHECK_USAGE}`)
    if (args[0] !== undefined) throw new UsageError(`unexpected argument "${args[0].split('=')[0]}" for "gw healthcheck"\n\nusage: ${HEALTHCHECK_USAGE}`)
    return healthcheck(config)
  }
  if (first === 'migrate') {
    if (args.includes('--help') || args.includes('-h')) return void console.log(`usage: ${MIGRATE_USAGE.trimStart()}`)
    const unknown = args.find((a) => a.startsWith('--') && !/^--from(=|$)/.test(a))
    if (unknown) throw new UsageError(`unknown flag "${unknown.split('=')[0]}" for "gw migrate"\n\nusage:\n${MIGRATE_USAGE}`)
    return runMigrate(config, args)
  }
  if (await runAdminCommand(config, rest, CONFIG_FLAGS)) return
  throw new UsageError(`unknown command "${first}"\n\n${USAGE}`)
}

main(Bun.argv.slice(2)).catch((err: unknown) => {
  if (err instanceof UsageError) {
    console.error(`gw: ${err.message}`)
    process.exit(2)
  }
  if (err instanceof ConfigError) console.error(`gw: ${err.message}`)
  else console.error('gw: could not start:', err instanceof Error ? err.message : err)
  process.exit(1)
})
