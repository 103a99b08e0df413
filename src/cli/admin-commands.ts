// `gw org|policy|provider|key …`: the admin API as subcommands, working on the configured database.

import { readFileSync } from 'node:fs'
import { AdminService } from '../admin/admin-service'
import { DEFAULT_ORG, ensureDefaultOrg } from '../admin/bootstrap'
import { type Config, PROVIDER_KEY_VARIABLES } from '../config'
import { toProviderId } from '../providers/provider-id'
import { GatewayError } from '../errors'
import { openStore } from '../server'
import { splitFrontMatter, versionBodyOf } from '../prompts/prompt-files'
import { type Args, flag, parseArgs, requireFlag, secretArg } from './args'
import { formatTable } from './table'

export const ADMIN_USAGE = `  gw org create --name NAME [--id ID]
  gw org show [--org ID]
  gw policy set [--org ID] (--json '{…}' | --file policy.json)
  gw provider set PROVIDER [--api-key -] [--org ID] [--base-url URL] [--disabled]
  gw provider key add PROVIDER NAME [--api-key -] [--weight N] [--base-url URL] [--disabled] [--org ID]
  gw provider key remove PROVIDER NAME [--org ID]
                    (the key from stdin with --api-key -, else from OPENAI_API_KEY, ANTHROPIC_API_KEY, …)
  gw key create [--org ID] [--name NAME] [--rpm N] [--tpm N]
  gw key revoke KEY_ID [--org ID]
  gw secret create [--org ID] [--kid KID] [--secret S]     (GwSigned signing secret; generated when not given)
  gw secret delete KID [--org ID]
  gw oidc set --issuer URL --audience AUD [--jwks-uri URL] [--org-claim CLAIM] [--org ID]
  gw token sign --sub SUBJECT [--ttl SECONDS] [--kid KID] [--end-user ID] [--org ID]
  gw prompt create --slug SLUG [--name NAME] [--org ID]
  gw prompt version SLUG_OR_ID (--file prompt.md | --model M --user-template T [--system-template T]
                    [--variables '[{"name":"x","type":"string","required":true}]'] [--temperature N] [--max-tokens N]) [--publish] [--org ID]
  gw prompt publish SLUG_OR_ID VERSION [--org ID]
  gw prompt show SLUG_OR_ID [--org ID]
  gw partial set NAME (--template T | --file F) [--org ID]
  gw route set NAME --targets P/MODEL[=WEIGHT],… [--strategy weighted|lowest-latency] [--fallback P/MODEL,…] [--org ID]
  gw route list [--org ID]
  gw route delete NAME [--org ID]
  gw usage [--org ID] [--since TIME] [--until TIME] [--group-by day|model|provider|key|endUser|metadata.KEY] [--json]
  gw logs prune --older-than DURATION      (e.g. 30d, 12h, 90m; roll-ups are kept)`

type Command = (admin: AdminService, argv: string[]) => Promise<unknown>

const COMMANDS: Record<string, Command> = {
  'org create': async (admin, argv) => {
    const a = parseArgs(argv)
    const id = flag(a, 'id')
    return admin.createOrg({ name: requireFlag(a, 'name'), ...(id ? { id } : {}) })
  },
  'org show': async (admin, argv) => admin.describeOrg(orgOf(parseArgs(argv))),
  'policy set': async (admin, argv) => {
    const a = parseArgs(argv)
    const file = flag(a, 'file')
    const text = file ? readFileSync(file, 'utf8') : requireFlag(a, 'json')
    return admin.putPolicy(orgOf(a), JSON.parse(text))
  },
  'provider set': async (admin, argv) => providerKey(admin, parseArgs(argv, ['disabled']), 'default'),
  'provider key': async (admin, argv) => {
    const [verb, ...rest] = argv
    const a = parseArgs(rest, ['disabled'])
    const name = a.positionals[1]
    if (!name) throw new Error('which key name? (gw provider key add PROVIDER NAME)')
    if (verb === 'add') return providerKey(admin, a, name)
    if (verb !== 'remove') throw new Error(`unknown "gw provider key ${verb ?? ''}": add or remove`)
    await admin.deleteProviderKey(orgOf(a), positional(a, 'which provider?'), name)
    return { removed: name }
  },
  'key create': async (admin, argv) => {
    const a = parseArgs(argv)
    return admin.createServiceKey(
      orgOf(a),
      pick({ name: flag(a, 'name'), requestsPerMinute: int(a, 'rpm'), tokensPerMinute: int(a, 'tpm') }),
    )
  },
  'key revoke': async (admin, argv) => {
    const a = parseArgs(argv)
    const id = positional(a, 'which key id? (see `gw org show`)')
    await admin.revokeServiceKey(orgOf(a), id)
    return { revoked: id }
  },
  'secret create': async (admin, argv) => {
    const a = parseArgs(argv)
    return admin.addSigningSecret(orgOf(a), pick({ kid: flag(a, 'kid'), secret: flag(a, 'secret') }))
  },
  'secret delete': async (admin, argv) => {
    const a = parseArgs(argv)
    const kid = positional(a, 'which kid? (see `gw org show`)')
    await admin.deleteSigningSecret(orgOf(a), kid)
    return { deleted: kid }
  },
  'oidc set': async (admin, argv) => {
    const a = parseArgs(argv)
    return admin.putOidc(
      orgOf(a),
      pick({ issuer: requireFlag(a, 'issuer'), audience: requireFlag(a, 'audience'), jwksUri: flag(a, 'jwks-uri'), orgClaim: flag(a, 'org-claim') }),
    )
  },
  'token sign': async (admin, argv) => {
    const a = parseArgs(argv)
    const org = orgOf(a)
    const token = await admin.signToken(org, {
      sub: requireFlag(a, 'sub'),
      ttl: int(a, 'ttl') ?? 3600,
      ...pick({ kid: flag(a, 'kid'), endUserId: flag(a, 'end-user') }),
    })
    return { token, authorization: `GwSigned ${token}` }
  },
  'prompt create': async (admin, argv) => {
    const a = parseArgs(argv)
    return admin.prompts.createPrompt(orgOf(a), pick({ slug: requireFlag(a, 'slug'), name: flag(a, 'name') }))
  },
  'prompt version': async (admin, argv) => {
    const a = parseArgs(argv, ['publish'])
    const file = flag(a, 'file')
    let body: Record<string, unknown>
    if (file) {
      const { front, body: text } = splitFrontMatter(readFileSync(file, 'utf8'))
      body = versionBodyOf({ ...front, slug: undefined, name: undefined, org: undefined }, text)
    } else {
      const vars = flag(a, 'variables')
      body = pick({
        model: requireFlag(a, 'model'),
        userTemplate: requireFlag(a, 'user-template'),
        systemTemplate: flag(a, 'system-template'),
        variables: vars === undefined ? undefined : (JSON.parse(vars) as unknown),
        temperature: num(a, 'temperature'),
        maxTokens: int(a, 'max-tokens'),
      })
    }
    if (a.flags.has('publish')) body.publish = true
    return admin.prompts.addVersion(orgOf(a), positional(a, 'which prompt? (slug or id)'), body)
  },
  'prompt publish': async (admin, argv) => {
    const a = parseArgs(argv)
    const version = a.positionals[1]
    if (!version) throw new Error('which version?')
    return admin.prompts.publish(orgOf(a), positional(a, 'which prompt? (slug or id)'), version)
  },
  'prompt show': async (admin, argv) => {
    const a = parseArgs(argv)
    return admin.prompts.describe(orgOf(a), positional(a, 'which prompt? (slug or id)'))
  },
  'route set': async (admin, argv) => {
    const a = parseArgs(argv)
    const list = (name: string) => (flag(a, name) ?? '').split(',').filter(Boolean)
    const targets = list('targets').map((t) => {
      const eq = t.lastIndexOf('=')
      if (eq < 0) return { model: t }
      const weight = Number(t.slice(eq + 1))
      if (!(weight > 0)) throw new Error(`--targets ${t}: the weight after "=" must be a number above 0`)
      return { model: t.slice(0, eq), weight }
    })
    if (!targets.length) throw new Error('--targets is required, e.g. --targets openai/gpt-4o-mini=3,mistral/mistral-small-latest=1')
    return admin.putRoute(orgOf(a), positional(a, 'which route name?'), {
      targets,
      ...pick({ strategy: flag(a, 'strategy') }),
      fallback: list('fallback').map((model) => ({ model })),
    })
  },
  'route list': async (admin, argv) => admin.listRoutes(orgOf(parseArgs(argv))),
  'route delete': async (admin, argv) => {
    const a = parseArgs(argv)
    const name = positional(a, 'which route name?')
    await admin.deleteRoute(orgOf(a), name)
    return { deleted: name }
  },
  usage: async (admin, argv) => {
    const a = parseArgs(argv, ['json'])
    const params = new URLSearchParams(pick({ since: flag(a, 'since'), until: flag(a, 'until'), groupBy: flag(a, 'group-by') }) as Record<string, string>)
    const report = await admin.usage(orgOf(a), params)
    if (a.flags.has('json')) return report
    return formatTable(
      [params.get('groupBy') ?? 'day', 'requests', 'errors', 'input', 'cached', 'cache write', 'output', 'reasoning', 'cost USD'],
      report.data.map((r) => [
        r.key,
        r.requests,
        r.errors,
        r.tokens.input,
        r.tokens.cachedInput,
        r.tokens.cacheWrite,
        r.tokens.output,
        r.tokens.reasoning,
        r.costUsd === null ? null : Number(r.costUsd.toFixed(6)),
      ]),
    )
  },
  'logs prune': async (admin, argv) => admin.pruneLogs(duration(requireFlag(parseArgs(argv), 'older-than'), 'older-than')),
  'partial set': async (admin, argv) => {
    const a = parseArgs(argv)
    const file = flag(a, 'file')
    const template = file ? splitFrontMatter(readFileSync(file, 'utf8')).body.replace(/\n+$/, '') : requireFlag(a, 'template')
    return admin.prompts.putPartial(orgOf(a), positional(a, 'which partial name?'), { template })
  },
}

/** `--org`, or the default org. */
function orgOf(a: ReturnType<typeof parseArgs>): string {
  return flag(a, 'org') ?? DEFAULT_ORG
}

function positional(a: ReturnType<typeof parseArgs>, question: string): string {
  const v = a.positionals[0]
  if (!v) throw new Error(question)
  return v
}

function num(a: ReturnType<typeof parseArgs>, name: string): number | undefined {
  const v = flag(a, name)
  if (v === undefined) return undefined
  const n = Number(v)
  if (v.trim() === '' || !Number.isFinite(n)) throw new Error(`--${name} must be a number`)
  return n
}

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/** `30d`, `12h`, `90m`, `45s` → milliseconds. */
function duration(v: string, name: string): number {
  const m = /^(\d+(?:\.\d+)?)([smhd])$/.exec(v)
  if (!m) throw new Error(`--${name} must be a duration such as 30d, 12h, 90m or 45s`)
  return Number(m[1]) * (UNIT_MS[m[2] as string] as number)
}

/** Drops undefined fields, so bodies carry only what was given. */
function pick<T extends Record<string, unknown>>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>
}

function int(a: ReturnType<typeof parseArgs>, name: string): number | undefined {
  const v = flag(a, name)
  if (v === undefined) return undefined
  if (!/^\d+$/.test(v)) throw new Error(`--${name} must be a whole number`)
  return Number(v)
}

/** Runs `gw <noun> <verb> …`; returns false when the words name no admin command. */
export async function runAdminCommand(config: Config, words: string[]): Promise<boolean> {
  const two = COMMANDS[`${words[0]} ${words[1]}`]
  const command = two ?? COMMANDS[words[0] as string]
  if (!command) return false
  const store = openStore(config)
  try {
    await ensureDefaultOrg(store)
    const out = await command(new AdminService(store), words.slice(two ? 2 : 1))
    console.log(typeof out === 'string' ? out : JSON.stringify(out, null, 2))
  } catch (err) {
    const msg = err instanceof GatewayError || err instanceof Error ? err.message : String(err)
    console.error(`gw: ${msg}`)
    process.exitCode = 1
  } finally {
    await store.close()
  }
  return true
}

/** `--api-key -` reads stdin; without it the provider's environment variable; never a value in argv. */
/** Sets one of the org's keys for a provider (`default` is the key of `gw provider set`). */
function providerKey(admin: AdminService, a: Args, name: string) {
  const provider = positional(a, 'which provider? (openai, anthropic, google, mistral)')
  return admin.putProvider(
    orgOf(a),
    provider,
    {
      apiKey: providerKeyArg(a, provider),
      enabled: !a.flags.has('disabled'),
      ...pick({ baseUrl: flag(a, 'base-url'), weight: num(a, 'weight') }),
    },
    name,
  )
}

function providerKeyArg(a: Args, provider: string): string {
  const id = toProviderId(provider)
  const variable = id && PROVIDER_KEY_VARIABLES[id]
  const instead = variable ? `set ${variable}` : 'pass it on stdin'
  const given = flag(a, 'api-key')
  if (given !== undefined) return secretArg('api-key', given, instead)
  const fromEnv = variable ? process.env[variable] : undefined
  if (!fromEnv) throw new Error(`the API key is required: pass "--api-key -" and the key on stdin, or ${instead}`)
  return fromEnv
}
