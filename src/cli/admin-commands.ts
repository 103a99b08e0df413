// `gw org|policy|provider|key …`: the admin API as subcommands, working on the configured database.

import { readFileSync } from 'node:fs'
import { AdminService } from '../admin/admin-service'
import { type Access, actorOf, authorize, type Principal } from '../admin/access'
import { asActor } from '../admin/audit'
import { DEFAULT_ORG, ensureDefaultOrg } from '../admin/bootstrap'
import { type Config, PROVIDER_KEY_VARIABLES } from '../config'
import { presetOf } from '../providers/openai-compatible'
import { isCompatName, toProviderId } from '../providers/provider-id'
import { GatewayError } from '../errors'
import { openStore } from '../server'
import { ChangeNotices } from '../shared/change-notices'
import { RedisLink } from '../shared/redis-link'
import type { Store } from '../store/types'
import { splitFrontMatter, versionBodyOf } from '../prompts/prompt-files'
import { type Args, flag, parseArgs, requireFlag, secretArg } from './args'
import { parseAuditQuery } from '../admin/log-query'
import { MemoryBudgetLedger } from '../policy/budget-ledger'
import type { LogEntry } from '../domain/log-entry'
import type { Route } from '../domain/org'
import type { publicMcpServer } from '../mcp/records'
import type { UsageRow } from '../store/usage-rollup'
import { PolicyBody } from '../schemas/admin-bodies'
import { schemaFieldLines } from './schema-help'
import { formatOutput, formatTable } from './table'

/** One line per subcommand: its help text and, through the flags it names, the flags it accepts. */
const USAGES = [
  'gw org create --name NAME [--id ID]',
  'gw org list',
  'gw org show [--org ID]',
  "gw policy set [--org ID] (--json '{…}' | --file policy.json)",
  `gw provider set PROVIDER [--api-key -] [--org ID] [--base-url URL] [--disabled] [--file record.json]
                    (the key from stdin with --api-key -, else from OPENAI_API_KEY, ANTHROPIC_API_KEY, …;
                     any other name is an OpenAI-compatible provider: --base-url, or a preset such as ollama, groq;
                     --file: the admin API's record, any kind: azure, bedrock, vertex, openai-compatible with quirks)`,
  'gw provider key add PROVIDER NAME [--api-key -] [--weight N] [--base-url URL] [--disabled] [--org ID]',
  'gw provider key remove PROVIDER NAME [--org ID]',
  'gw key create [--org ID] [--name NAME] [--rpm N] [--tpm N] [--expires TIME] [--endpoints PATH,…] [--models GLOB,…] [--mcp-allow GLOB,…] [--mcp-deny GLOB,…]',
  'gw key list [--org ID]',
  'gw key revoke KEY_ID [--org ID]',
  'gw key rotate KEY_ID [--grace SECONDS] [--org ID]',
  'gw user create --email EMAIL --role owner|admin|viewer [--name NAME] [--orgs ID,…]     (prints a first-sign-in link)',
  'gw user list',
  'gw user set-role USER --role owner|admin|viewer [--orgs ID,…]      (USER: an id or an email)',
  'gw user remove USER',
  'gw user set-password USER --password -      (the password from stdin)',
  'gw user link USER        (a new first-sign-in link, valid once for 24 hours)',
  'gw user show USER        (its role, orgs and personal tokens: id, name, creation, last use)',
  'gw user token USER [--name NAME]     (a personal admin token, gw_at_…, acting with the user\'s role)',
  'gw user revoke-token USER TOKEN_ID     (that personal token is refused from its next use on)',
  'gw audit [--org ID] [--actor KIND|ID|EMAIL] [--action ACTION] [--since TIME] [--until TIME] [--limit N] [--cursor C]',
  'gw secret create [--org ID] [--kid KID] [--secret -]     (GwSigned signing secret: from stdin with --secret -, else generated)',
  'gw secret list [--org ID]',
  'gw secret delete KID [--org ID]',
  'gw oidc set --issuer URL --audience AUD [--jwks-uri URL] [--org-claim CLAIM] [--org ID]',
  'gw token sign --sub SUBJECT [--ttl SECONDS] [--kid KID] [--end-user ID] [--org ID]',
  'gw prompt create --slug SLUG [--name NAME] [--org ID]',
  'gw prompt list [--org ID]',
  `gw prompt version SLUG_OR_ID (--file prompt.md | --model M --user-template T [--system-template T]
                    [--variables '[{"name":"x","type":"string","required":true}]'] [--temperature N] [--max-tokens N]) [--publish] [--org ID]`,
  'gw prompt publish SLUG_OR_ID VERSION [--org ID]',
  'gw prompt show SLUG_OR_ID [--org ID]',
  'gw partial set NAME (--template T | --file F) [--org ID]',
  'gw route set NAME --targets P/MODEL[=WEIGHT],… [--strategy weighted|lowest-latency] [--fallback P/MODEL,…] [--org ID]',
  'gw route list [--org ID]',
  'gw route delete NAME [--org ID]',
  'gw mcp set NAME --url URL [--header NAME=VALUE,…] [--auth none|bearer|oauth] [--token -] [--scope S] [--client-id ID] [--client-secret -] [--disabled] [--org ID]',
  'gw mcp list [--org ID]',
  'gw mcp remove NAME [--org ID]',
  'gw mcp users NAME [--org ID]          (end users gw holds OAuth tokens for at the server)',
  'gw mcp forget NAME --user END_USER [--org ID]   (forget their tokens: their next call asks them again)',
  'gw budget set --scope org|key|endUser --period day|month|total --usd N [--org ID]',
  'gw budget remove --scope org|key|endUser --period day|month|total [--org ID]',
  'gw budget list [--org ID]        (spent, reserved and remaining in the current period)',
  'gw usage [--org ID] [--since TIME] [--until TIME] [--group-by day|model|provider|key|endUser|metadata.KEY]',
  'gw logs list [--org ID] [--model M] [--provider P] [--status success|error|CODE] [--user U] [--metadata K=V[,K2=V2]] [--since TIME] [--until TIME] [--limit N] [--cursor C]',
  'gw logs show REQUEST_ID [--org ID]',
  'gw logs prune --older-than DURATION      (e.g. 30d, 12h, 90m; roll-ups are kept)',
]

export const ADMIN_USAGE = `${USAGES.map((u) => `  ${u}`).join('\n')}

  Admin commands print tables; add --json for JSON (for scripts). --help after any command explains it.`

/**
 * What each flag means, one line each for `gw <command> --help`; a `command --flag` entry says what
 * the flag means for that command when it differs between commands.
 */
const FLAG_HELP: Record<string, string> = {
  org: 'the org to act on (default: "default")',
  'org create --name': "the org's display name",
  'org create --id': 'its id: lowercase letters, digits, "-" and "_", at most 64 (default: a random UUID)',
  'policy set --json': "the whole policy as a JSON object (fields below); it replaces the org's policy",
  'policy set --file': 'a file holding that JSON object',
  'api-key': 'only "-": the key is read from stdin (a value in argv would show in `ps`)',
  'provider set --file': 'a file (or "-": stdin) holding the record as PUT /admin/orgs/:org/providers/:provider takes it, secrets included (never in argv)',
  'base-url': "the provider API's base URL (default: the provider's own, or GW_<PROVIDER>_BASE_URL)",
  disabled: 'store the key switched off',
  weight: "this key's share of the provider's requests among the org's keys for it (default 1)",
  'key create --name': 'a name to tell the key by',
  rpm: 'requests per minute this key may make',
  expires: 'when the key stops working (ISO 8601, e.g. 2027-01-31T00:00:00Z)',
  endpoints: 'the only endpoint paths the key may call, e.g. /v1/chat/completions,/v1/embeddings',
  models: 'the only models the key may use: provider/model globs such as openai/*',
  grace: 'seconds the old key keeps working (default 0: revoked at once)',
  email: "the user's email: names them at sign-in (password or single sign-on)",
  role: 'owner (everything), admin (everything in its orgs but users) or viewer (reads its orgs)',
  orgs: 'the orgs an admin or viewer acts in, comma-separated',
  'user create --name': "the user's display name",
  'user token --name': 'a name to tell the token by',
  password: 'only "-": the password is read from stdin (at least 12 characters)',
  actor: "only entries of this actor: a kind (user, admin-token, cli, config-file), a user's id or email",
  action: 'only entries of this action (e.g. policy.set), or of actions starting with a prefix ending in "." (service-key.)',
  'audit --org': 'only entries of this org',
  'audit --limit': 'at most this many entries (default 50)',
  tpm: 'tokens per minute this key may use',
  'secret create --kid': 'the key id tokens name in their header (default: generated)',
  secret: 'only "-": the signing secret is read from stdin (default: generated, printed once)',
  issuer: "the identity provider's issuer URL (the tokens' iss)",
  audience: 'the audience tokens must carry (aud)',
  'jwks-uri': "where the issuer's signing keys are (default: from its discovery document)",
  'org-claim': 'a claim whose value must be this org id (for an issuer shared by several orgs)',
  sub: "the token's subject",
  ttl: 'seconds the token is valid (default 3600)',
  'token sign --kid': 'the signing secret to sign with (default: the newest)',
  'end-user': 'the end user the token acts for (logged; counted in endUser budgets)',
  slug: "the prompt's slug, used to run it: /v1/prompts/SLUG/run",
  'prompt create --name': 'a display name',
  'prompt version --file': 'a prompt file: front matter and template, as in GW_PROMPTS_DIR',
  model: 'the model: provider/model or a route name',
  'user-template': "the user message's template ({{variable}} placeholders)",
  'system-template': "the system message's template",
  variables: 'a JSON array of the variables the templates take',
  temperature: 'the sampling temperature',
  'max-tokens': 'the most tokens an answer may have',
  publish: 'make this version the published one (what runs use)',
  template: "the partial's template",
  'partial set --file': 'a file holding the template (front matter is left out)',
  targets: 'provider/model entries with an optional =weight, comma-separated',
  strategy: 'weighted (the default) or lowest-latency',
  fallback: 'provider/model entries tried in order when the targets fail, comma-separated',
  url: "the MCP server's Streamable HTTP endpoint",
  'mcp-allow': 'MCP tools (<server>__<tool> globs, comma-separated) this key may see and call, within the org\'s',
  'mcp-deny': 'MCP tools (globs, comma-separated) this key may not see or call',
  header: 'headers sent on every request to the server, comma-separated NAME=VALUE (stored encrypted)',
  auth: 'none (the default), bearer (a stored secret: --token -) or oauth (each end user authorises gw)',
  token: 'only "-": the bearer secret is read from stdin',
  'client-id': 'an OAuth client registered by hand (default: dynamic client registration)',
  'client-secret': "only \"-\": the OAuth client's secret is read from stdin",
  'mcp set --scope': 'the OAuth scope to ask for',
  'mcp forget --user': 'the end user whose tokens gw forgets',
  'mcp set --disabled': 'store the server switched off',
  scope: "whose spend the budget counts: the org's, each key's or each end user's",
  period: 'the period it counts over',
  usd: 'the budget in US dollars',
  since: 'from this time (ISO 8601 or epoch ms)',
  until: 'up to this time (ISO 8601 or epoch ms)',
  'usage --since': 'from this day (ISO 8601 or epoch ms; default: the last 30 days)',
  'usage --until': 'to this day (ISO 8601 or epoch ms; default: today)',
  'group-by': 'one row per day (the default), model, provider, key, end user or metadata value',
  'logs list --model': 'only entries of this model',
  provider: 'only entries of this provider',
  status: 'only successes, errors, or one HTTP status',
  user: 'only entries of this end user',
  metadata: 'only entries carrying these metadata values',
  limit: 'at most this many entries',
  cursor: 'the next page, as the previous one printed it',
  'older-than': 'remove raw log entries older than this (daily roll-ups stay)',
}

/** The help of one command: its usage line, then one line per flag it takes (and the policy's fields for `policy set`). */
function commandHelp(name: string, usage: string): string {
  const flags = [...new Set([...usage.matchAll(/--([a-z][a-z0-9-]*)/g)].map((m) => m[1] as string))]
  const line = (flag: string, text: string) => `  ${`--${flag}`.padEnd(20)}${text}`
  const lines = flags.map((f) => line(f, FLAG_HELP[`${name} --${f}`] ?? FLAG_HELP[f] ?? ''))
  if (name !== 'policy set') lines.push(line('json', 'print JSON instead of a table (for scripts)'))
  lines.push(line('help', 'this help'), `  configuration flags (--db, --port, …; gw serve --help lists them) work here too`)
  const fields = name === 'policy set' ? `\n\npolicy fields (all optional; an absent one sets no rule):\n${schemaFieldLines(PolicyBody).map((l) => `  ${l}`).join('\n')}` : ''
  return `usage: ${usage}\n\nflags:\n${lines.join('\n')}${fields}`
}

/** A command's words (`org create`, `provider key add`, a lone `usage`) → its usage line. */
const USAGE_OF = new Map(USAGES.map((u) => [(/^gw ([a-z]+(?: [a-z][a-z-]*){0,2})(?= |$)/.exec(u) as RegExpExecArray)[1] as string, u]))

type Command = (admin: AdminService, argv: string[]) => Promise<unknown>

const COMMANDS: Record<string, Command> = {
  'org create': async (admin, argv) => {
    const a = parseArgs(argv)
    const id = flag(a, 'id')
    return admin.createOrg({ name: requireFlag(a, 'name'), ...(id ? { id } : {}) })
  },
  'org list': async (admin) => admin.listOrgs(),
  'org show': async (admin, argv) => admin.describeOrg(orgOf(parseArgs(argv))),
  'budget set': async (admin, argv) => {
    const a = parseArgs(argv)
    const scope = requireFlag(a, 'scope')
    const period = requireFlag(a, 'period')
    const org = orgOf(a)
    const policy = (await admin.requireOrg(org)).policy
    const others = (policy.budgets ?? []).filter((b) => b.scope !== scope || b.period !== period)
    return admin.putPolicy(org, { ...policy, budgets: [...others, { scope, period, usd: num(a, 'usd') ?? requireFlag(a, 'usd') }] })
  },
  'budget remove': async (admin, argv) => {
    const a = parseArgs(argv)
    const scope = requireFlag(a, 'scope')
    const period = requireFlag(a, 'period')
    const org = orgOf(a)
    const policy = (await admin.requireOrg(org)).policy
    const budgets = (policy.budgets ?? []).filter((b) => b.scope !== scope || b.period !== period)
    if (budgets.length === policy.budgets?.length) throw new Error(`org "${org}" has no ${scope} budget per ${period}`)
    return admin.putPolicy(org, { ...policy, budgets })
  },
  // A CLI process holds no reservations: spent is what the roll-ups say.
  'budget list': async (admin, argv) => admin.budgets(orgOf(parseArgs(argv)), new MemoryBudgetLedger()),
  'policy set': async (admin, argv) => {
    const a = parseArgs(argv)
    const file = flag(a, 'file')
    const text = file ? readFileSync(file, 'utf8') : requireFlag(a, 'json')
    return admin.putPolicy(orgOf(a), JSON.parse(text))
  },
  'provider set': async (admin, argv) => providerKey(admin, parseArgs(argv, ['disabled']), 'default'),
  'provider key add': async (admin, argv) => {
    const a = parseArgs(argv, ['disabled'])
    return providerKey(admin, a, keyName(a))
  },
  'provider key remove': async (admin, argv) => {
    const a = parseArgs(argv)
    const name = keyName(a)
    await admin.deleteProviderKey(orgOf(a), positional(a, 'which provider?'), name)
    return { removed: name }
  },
  'key create': async (admin, argv) => {
    const a = parseArgs(argv)
    return admin.createServiceKey(
      orgOf(a),
      pick({
        name: flag(a, 'name'),
        requestsPerMinute: int(a, 'rpm'),
        tokensPerMinute: int(a, 'tpm'),
        expiresAt: flag(a, 'expires'),
        scopes: a.flags.has('endpoints') || a.flags.has('models') ? pick({ endpoints: list(a, 'endpoints'), models: list(a, 'models') }) : undefined,
        mcp: keyToolPolicy(a),
      }),
    )
  },
  'key list': async (admin, argv) => admin.listServiceKeys(orgOf(parseArgs(argv))),
  'key rotate': async (admin, argv) => {
    const a = parseArgs(argv)
    return admin.rotateServiceKey(orgOf(a), positional(a, 'which key id? (see `gw key list`)'), pick({ graceSeconds: int(a, 'grace') }))
  },
  'user create': async (admin, argv) => {
    const a = parseArgs(argv)
    const user = await admin.users.create(pick({ email: requireFlag(a, 'email'), role: requireFlag(a, 'role'), name: flag(a, 'name'), orgs: list(a, 'orgs') }))
    return { ...user, ...(await signInLink(admin, user.id)) }
  },
  'user list': async (admin) => admin.users.list(),
  'user set-role': async (admin, argv) => {
    const a = parseArgs(argv)
    const user = await admin.users.findUser(positional(a, 'which user? (an id or an email)'))
    return admin.users.update(user.id, pick({ role: requireFlag(a, 'role'), orgs: list(a, 'orgs') }))
  },
  'user remove': async (admin, argv) => {
    const user = await admin.users.findUser(positional(parseArgs(argv), 'which user? (an id or an email)'))
    await admin.users.remove(user.id)
    return { removed: user.email }
  },
  'user set-password': async (admin, argv) => {
    const a = parseArgs(argv)
    const user = await admin.users.findUser(positional(a, 'which user? (an id or an email)'))
    await admin.users.setPassword(user.id, { password: secretArg('password', requireFlag(a, 'password'), 'send a first-sign-in link: gw user link') })
    return { passwordSet: user.email }
  },
  'user link': async (admin, argv) => {
    const user = await admin.users.findUser(positional(parseArgs(argv), 'which user? (an id or an email)'))
    return { email: user.email, ...(await signInLink(admin, user.id)) }
  },
  'user show': async (admin, argv) => {
    const user = await admin.users.findUser(positional(parseArgs(argv), 'which user? (an id or an email)'))
    return admin.users.describe(user.id)
  },
  'user token': async (admin, argv) => {
    const a = parseArgs(argv)
    const user = await admin.users.findUser(positional(a, 'which user? (an id or an email)'))
    return admin.users.createToken(user.id, pick({ name: flag(a, 'name') }))
  },
  'user revoke-token': async (admin, argv) => {
    const a = parseArgs(argv)
    const user = await admin.users.findUser(positional(a, 'which user? (an id or an email)'))
    const tokenId = a.positionals[1]
    if (!tokenId) throw new Error('which token? (its id: see `gw user show USER`)')
    await admin.users.revokeToken(user.id, tokenId)
    return { revoked: tokenId }
  },
  audit: async (admin, argv) => {
    const a = parseArgs(argv)
    const params = new URLSearchParams(
      pick({ org: flag(a, 'org'), actor: flag(a, 'actor'), action: flag(a, 'action'), since: flag(a, 'since'), until: flag(a, 'until'), limit: flag(a, 'limit'), cursor: flag(a, 'cursor') }) as Record<string, string>,
    )
    return admin.auditPage(parseAuditQuery(params))
  },
  'key revoke': async (admin, argv) => {
    const a = parseArgs(argv)
    const id = positional(a, 'which key id? (see `gw org show`)')
    await admin.revokeServiceKey(orgOf(a), id)
    return { revoked: id }
  },
  'secret create': async (admin, argv) => {
    const a = parseArgs(argv)
    const given = flag(a, 'secret')
    const secret = given === undefined ? undefined : secretArg('secret', given, 'leave it out and gw generates one (printed once)')
    return admin.addSigningSecret(orgOf(a), pick({ kid: flag(a, 'kid'), secret }))
  },
  'secret list': async (admin, argv) => admin.listSigningSecrets(orgOf(parseArgs(argv))),
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
  'prompt list': async (admin, argv) => admin.prompts.list(orgOf(parseArgs(argv))),
  'prompt version': async (admin, argv) => {
    const a = parseArgs(argv, ['publish'])
    const prompt = positional(a, 'which prompt? (slug or id)')
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
    return admin.prompts.addVersion(orgOf(a), prompt, body)
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
    const name = positional(a, 'which route name?')
    const list = (name: string) => (flag(a, name) ?? '').split(',').filter(Boolean)
    const targets = list('targets').map((t) => {
      const eq = t.lastIndexOf('=')
      if (eq < 0) return { model: t }
      const weight = Number(t.slice(eq + 1))
      if (!(weight > 0)) throw new Error(`--targets ${t}: the weight after "=" must be a number above 0`)
      return { model: t.slice(0, eq), weight }
    })
    if (!targets.length) throw new Error('--targets is required, e.g. --targets openai/gpt-4o-mini=3,mistral/mistral-small-latest=1')
    return admin.putRoute(orgOf(a), name, {
      targets,
      ...pick({ strategy: flag(a, 'strategy') }),
      fallback: list('fallback').map((model) => ({ model })),
    })
  },
  'route list': async (admin, argv) => admin.listRoutes(orgOf(parseArgs(argv))),
  'mcp set': async (admin, argv) => {
    const a = parseArgs(argv, ['disabled'])
    const kind = flag(a, 'auth') ?? 'none'
    const token = flag(a, 'token')
    const clientSecret = flag(a, 'client-secret')
    const headers = Object.fromEntries(
      (flag(a, 'header') ?? '').split(',').filter(Boolean).map((h) => {
        const eq = h.indexOf('=')
        if (eq < 1) throw new Error(`--header ${h.slice(0, 64)}: expected NAME=VALUE`)
        return [h.slice(0, eq), h.slice(eq + 1)]
      }),
    )
    const auth =
      kind === 'bearer'
        ? { kind, token: secretArg('token', token ?? '', 'use --auth oauth or none') }
        : kind === 'oauth'
          ? { kind, ...pick({ scope: flag(a, 'scope'), clientId: flag(a, 'client-id'), clientSecret: clientSecret === undefined ? undefined : secretArg('client-secret', clientSecret, 'leave it out') }) }
          : { kind }
    return admin.mcp.put(orgOf(a), positional(a, 'which MCP server name?'), { url: requireFlag(a, 'url'), headers, auth, enabled: !a.flags.has('disabled') })
  },
  'mcp list': async (admin, argv) => admin.mcp.list(orgOf(parseArgs(argv))),
  'mcp users': async (admin, argv) => {
    const a = parseArgs(argv)
    return admin.mcp.users(orgOf(a), positional(a, 'which MCP server name?'))
  },
  'mcp forget': async (admin, argv) => {
    const a = parseArgs(argv)
    const user = requireFlag(a, 'user')
    await admin.mcp.forgetUser(orgOf(a), positional(a, 'which MCP server name?'), user)
    return { forgotten: user }
  },
  'mcp remove': async (admin, argv) => {
    const a = parseArgs(argv)
    const name = positional(a, 'which MCP server name?')
    await admin.mcp.delete(orgOf(a), name)
    return { removed: name }
  },
  'route delete': async (admin, argv) => {
    const a = parseArgs(argv)
    const name = positional(a, 'which route name?')
    await admin.deleteRoute(orgOf(a), name)
    return { deleted: name }
  },
  usage: async (admin, argv) => {
    const a = parseArgs(argv)
    const params = new URLSearchParams(pick({ since: flag(a, 'since'), until: flag(a, 'until'), groupBy: flag(a, 'group-by') }) as Record<string, string>)
    return admin.usage(orgOf(a), params)
  },
  'logs list': async (admin, argv) => {
    const a = parseArgs(argv)
    const params = new URLSearchParams(
      pick({ model: flag(a, 'model'), provider: flag(a, 'provider'), status: flag(a, 'status'), user: flag(a, 'user'), since: flag(a, 'since'), until: flag(a, 'until'), limit: flag(a, 'limit'), cursor: flag(a, 'cursor') }) as Record<string, string>,
    )
    for (const pair of (flag(a, 'metadata') ?? '').split(',').filter(Boolean)) params.append('metadata', pair.trim())
    return admin.listLogs(orgOf(a), params)
  },
  'logs show': async (admin, argv) => {
    const a = parseArgs(argv)
    return admin.getLog(orgOf(a), positional(a, 'which request id?'))
  },
  'logs prune': async (admin, argv) => admin.pruneLogs(duration(requireFlag(parseArgs(argv), 'older-than'), 'older-than')),
  'partial set': async (admin, argv) => {
    const a = parseArgs(argv)
    const file = flag(a, 'file')
    const template = file ? splitFrontMatter(readFileSync(file, 'utf8')).body.replace(/\n+$/, '') : requireFlag(a, 'template')
    return admin.prompts.putPartial(orgOf(a), positional(a, 'which partial name?'), { template })
  },
}

/** The NAME of `gw provider key add|remove PROVIDER NAME`. */
function keyName(a: Args): string {
  const name = a.positionals[1]
  if (!name) throw new Error('which key name? (gw provider key add PROVIDER NAME)')
  return name
}

/** A comma-separated flag as a list; undefined when absent. */
function list(a: Args, name: string): string[] | undefined {
  return flag(a, name)?.split(',').map((x) => x.trim()).filter(Boolean)
}

/** Where the dashboard is, for the links the CLI prints: GW_PUBLIC_URL, else the admin listener when it has its own port, else GW_HOST and GW_PORT. */
let dashboardOrigin = 'http://127.0.0.1:8787'

/** A first-sign-in link: opened once within 24 hours, it signs the user in to set a password. */
async function signInLink(admin: AdminService, userId: string): Promise<{ signInLink: string; linkExpiresAt: string }> {
  const { secret, expiresAt } = await admin.users.signInLink(userId)
  return { signInLink: `${dashboardOrigin}/ui/#first-sign-in=${secret}`, linkExpiresAt: expiresAt }
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
/** `--mcp-allow` / `--mcp-deny` as a key's MCP tool policy; undefined when neither is given. */
function keyToolPolicy(a: Args): { allowedTools?: string[]; deniedTools?: string[] } | undefined {
  const globs = (name: string) => flag(a, name)?.split(',').filter(Boolean)
  const policy = pick({ allowedTools: globs('mcp-allow'), deniedTools: globs('mcp-deny') })
  return Object.keys(policy).length ? policy : undefined
}

function pick<T extends Record<string, unknown>>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>
}

function int(a: ReturnType<typeof parseArgs>, name: string): number | undefined {
  const v = flag(a, name)
  if (v === undefined) return undefined
  if (!/^\d+$/.test(v)) throw new Error(`--${name} must be a whole number`)
  return Number(v)
}

/** Waits for the database (PostgreSQL is connected and migrated in the background); fails after 10 s. */
export async function storeReachable(store: Store, ms = 10_000): Promise<void> {
  if (store.ready) return
  const ok = await Promise.race([store.whenReady.then(() => true), Bun.sleep(ms).then(() => false)])
  if (!ok) throw new Error(`the ${store.kind} database did not answer within ${ms / 1000} s; check GW_DATABASE_URL and that the server runs`)
}

const NOUNS = new Set([...USAGE_OF.keys()].map((k) => k.split(' ')[0] as string))

/** Commands whose table is not the generic one; `argv` is what the command was given. */
const TABLES: Record<string, (out: never, argv: string[]) => string> = {
  'route list': (routes: { data: Route[] }) =>
    formatTable(
      ['name', 'strategy', 'targets (weight)', 'fallback', 'updated'],
      routes.data.map((r) => [
        r.name,
        r.strategy,
        r.targets.map((t) => `${t.model} (${t.weight})`).join(', '),
        r.fallback.map((f) => f.model).join(', ') || null,
        r.updatedAt,
      ]),
    ),
  'mcp list': (servers: { data: ReturnType<typeof publicMcpServer>[] }) =>
    formatTable(
      ['name', 'url', 'auth', 'headers', 'enabled', 'updated'],
      servers.data.map((s) => [s.name, s.url, s.auth.kind, s.headers.join(', ') || null, s.enabled ? 'yes' : 'no', s.updatedAt]),
    ),
  'logs list': (page: { data: LogEntry[]; nextCursor: string | null }) =>
    `${formatTable(
      ['time', 'status', 'model', 'latency ms', 'tokens', 'cost USD', 'user', 'request id'],
      page.data.map((e) => [e.createdAt, e.status, e.model ?? e.requestedModel, e.latencyMs, e.usage.totalTokens, e.costUsd, e.endUserId, e.requestId]),
    )}${page.nextCursor ? `\n\nolder entries: --cursor ${page.nextCursor}` : ''}`,
  usage: (report: { data: UsageRow[] }, argv) =>
    formatTable(
      [flag(parseArgs(argv), 'group-by') ?? 'day', 'requests', 'errors', 'input', 'cached', 'cache write', 'output', 'reasoning', 'cost USD'],
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
    ),
}

/** The usage lines of the commands starting with `prefix` (`gw key --help`, `gw provider key --help`). */
function prefixUsage(prefix: string): string {
  return USAGES.filter((u) => u.startsWith(`gw ${prefix} `)).map((u) => `  ${u}`).join('\n')
}

/** Flags that take no value. */
const SWITCHES = new Set(['json', 'help', 'disabled', 'publish'])

/**
 * Flags a command accepts: those its usage line names, plus --json, --help and the configuration
 * flags; and no more plain words than the usage line names (`gw policy set acme …` would otherwise
 * act on the default org).
 */
function checkFlags(usage: string, argv: string[], configFlags: ReadonlySet<string>): void {
  const allowed = new Set(['json', 'help', ...[...usage.matchAll(/--([a-z][a-z0-9-]*)/g)].map((m) => m[1] as string)])
  const command = usage.split(' ').slice(0, 3).join(' ')
  const words = (/^gw (?:[a-z][a-z-]* ?){1,3}((?:[A-Z][A-Z_]* ?)*)/.exec(usage)?.[1] ?? '').split(' ').filter(Boolean)
  let positionals = 0
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string
    const name = /^--([^=]*)/.exec(a)?.[1]
    if (name === undefined) {
      if (++positionals > words.length)
        throw new UsageError(`unexpected argument "${a.slice(0, 64)}" for "${command}"${allowed.has('org') ? ' (an org is given with --org)' : ''}\n\nusage: ${usage}`)
      continue
    }
    if (!allowed.has(name) && !configFlags.has(name)) throw new UsageError(`unknown flag "--${name}" for "${command}"\n\nusage: ${usage}`)
    const takesValue = !a.includes('=') && (!SWITCHES.has(name) || (name === 'json' && command === 'gw policy set'))
    if (takesValue && argv[i + 1] !== undefined && !(argv[i + 1] as string).startsWith('--')) i++
  }
}

/** Takes the output switch --json out of argv (`policy set --json '{…}'` keeps its own --json value). */
function takeJsonSwitch(command: string, argv: string[]): { asJson: boolean; rest: string[] } {
  const rest: string[] = []
  let asJson = false
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string
    const next = argv[i + 1]
    if (a !== '--json') rest.push(a)
    else if (command === 'policy set' && next !== undefined && !next.startsWith('--')) rest.push(a, argv[++i] as string)
    else asJson = true
  }
  return { asJson, rest }
}

export class UsageError extends Error {}

/**
 * What each command needs of a user acting through GW_TOKEN (PRODUCT §18), as the admin API's
 * operations do (src/admin/access.ts); a command not named here changes an org (`change`). Listings
 * across orgs (`org list`, `audit`) are an owner's here: the admin API and the dashboard show a user
 * its own orgs' part.
 */
const ACCESS: Record<string, Access> = {
  'org show': 'read',
  'budget list': 'read',
  'key list': 'read',
  'secret list': 'read',
  'prompt list': 'read',
  'prompt show': 'read',
  'route list': 'read',
  'mcp list': 'read',
  'mcp users': 'read',
  'logs list': 'read',
  'logs show': 'read',
  usage: 'read',
  'org create': 'owner',
  'org list': 'owner',
  'user create': 'owner',
  'user list': 'owner',
  'user set-role': 'owner',
  'user remove': 'owner',
  'user link': 'owner',
  audit: 'owner',
  'logs prune': 'owner',
  'user show': 'self',
  'user token': 'self',
  'user set-password': 'self',
  'user revoke-token': 'self',
}

/** Who runs the command: the user of the personal admin token in GW_TOKEN, or (unset) the operator at the database, an owner. */
async function cliPrincipal(admin: AdminService): Promise<Principal | undefined> {
  const token = process.env.GW_TOKEN?.trim()
  if (!token) return undefined
  const user = await admin.users.userOfToken(token)
  if (!user) throw new Error('GW_TOKEN is not a valid personal admin token (revoked, or its user was removed)')
  return { kind: 'user', user }
}

/** Throws 403 `forbidden` unless the principal may run the command, on the org (--org) or user it names. */
async function authorizeCommand(principal: Principal, admin: AdminService, name: string, argv: string[]): Promise<void> {
  const access = ACCESS[name] ?? 'change'
  const a = parseArgs(argv)
  const params: Record<string, string> =
    access === 'self' ? { id: (await admin.users.findUser(positional(a, 'which user? (an id or an email)'))).id } : access === 'owner' ? {} : { org: orgOf(a) }
  authorize(principal, access, params)
}

/**
 * Runs `gw <noun> <verb> …`; returns false when the words name no admin noun. An unknown verb or
 * flag is a UsageError naming it.
 */
export async function runAdminCommand(config: Config, words: string[], configFlags: ReadonlySet<string>): Promise<boolean> {
  if (!NOUNS.has(words[0] ?? '')) return false
  const wantsHelp = (xs: string[]) => xs.includes('--help') || xs.includes('-h')
  const lead = (n: number) => words.slice(0, n).join(' ')
  // The longest run of leading words that names a command: `provider key add`, `org create`, `usage`.
  const name = [3, 2, 1].map(lead).find((k) => USAGE_OF.has(k))
  const usage = name && USAGE_OF.get(name)
  const command = name && COMMANDS[name]
  if (!name || !usage || !command) {
    // Words that only begin commands (`gw key`, `gw provider key`): their usage, or the unknown word named.
    const n = [2, 1].find((k) => USAGES.some((u) => u.startsWith(`gw ${lead(k)} `))) ?? 1
    const next = words[n]
    if (next === undefined || wantsHelp([next])) {
      console.log(`usage:\n${prefixUsage(lead(n))}`)
      return true
    }
    throw new UsageError(`unknown subcommand "${lead(n)} ${next}"\n\nusage:\n${prefixUsage(lead(n))}`)
  }
  const argv = words.slice(name.split(' ').length)
  if (wantsHelp(argv)) {
    console.log(commandHelp(name, usage))
    return true
  }
  checkFlags(usage, argv, configFlags)
  const { asJson, rest } = takeJsonSwitch(name, argv)
  const store = openStore(config)
  // With Redis, the running instances hear of the change at once (else within their cache lifetime).
  const link = config.redisUrl ? new RedisLink(config.redisUrl) : undefined
  const notices = link && (await link.connect()) ? new ChangeNotices(link, config.redisPrefix) : undefined
  const changed: Promise<void>[] = []
  try {
    await storeReachable(store)
    await ensureDefaultOrg(store)
    const admin = new AdminService(store, (orgId) => notices && changed.push(notices.publish({ kind: 'org', orgId })))
    const listener = config.adminListener ?? { host: config.host, port: config.port }
    const host = listener.host === '0.0.0.0' || listener.host === '::' ? 'localhost' : listener.host.includes(':') ? `[${listener.host}]` : listener.host
    dashboardOrigin = config.publicUrl ?? `http://${host}:${listener.port || 8787}`
    // Every change the command makes is recorded in the audit log as made by the CLI, or by the user of GW_TOKEN.
    const principal = await cliPrincipal(admin)
    if (principal) await authorizeCommand(principal, admin, name, rest)
    const out = await asActor(principal ? actorOf(principal) : { kind: 'cli' }, () => command(admin, rest))
    await Promise.all(changed)
    console.log(asJson ? JSON.stringify(out, null, 2) : (TABLES[name]?.(out as never, rest) ?? formatOutput(out)))
  } catch (err) {
    const msg = err instanceof GatewayError || err instanceof Error ? err.message : String(err)
    console.error(`gw: ${msg}`)
    process.exitCode = 1
  } finally {
    link?.close()
    await store.close()
  }
  return true
}

/** Sets one of the org's keys for a provider (`default` is the key of `gw provider set`). */
function providerKey(admin: AdminService, a: Args, name: string) {
  const provider = positional(a, 'which provider? (openai, anthropic, google, mistral, or an OpenAI-compatible one)')
  const file = flag(a, 'file')
  if (file !== undefined) {
    // A record of any kind (PRODUCT §17), as the admin API takes it: from a file or stdin, so its secrets stay out of argv.
    const body = JSON.parse(readFileSync(file === '-' ? 0 : file, 'utf8')) as unknown
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new Error('--file must hold a JSON object: the provider record')
    return admin.putProvider(orgOf(a), provider, a.flags.has('disabled') ? { ...body, enabled: false } : body, name)
  }
  if (!toProviderId(provider) && isCompatName(provider)) {
    // An OpenAI-compatible provider (PRODUCT §17): its key is optional, from stdin or the preset's variable.
    const given = flag(a, 'api-key')
    const variable = presetOf(provider)?.keyEnv
    const apiKey = given !== undefined ? secretArg('api-key', given, variable ? `set ${variable}` : 'leave it out') : variable ? process.env[variable] : undefined
    return admin.putProvider(
      orgOf(a),
      provider,
      { kind: 'openai-compatible', enabled: !a.flags.has('disabled'), ...pick({ apiKey: apiKey || undefined, baseUrl: flag(a, 'base-url'), weight: num(a, 'weight') }) },
      name,
    )
  }
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

/** `--api-key -` reads stdin; without it the provider's environment variable; never a value in argv. */
function providerKeyArg(a: Args, provider: string): string {
  const id = toProviderId(provider)
  if (!id) throw new Error(`unknown provider "${provider.slice(0, 64)}" (openai, anthropic, google, mistral)`)
  const variable = PROVIDER_KEY_VARIABLES[id]
  const instead = `set ${variable}`
  const given = flag(a, 'api-key')
  if (given !== undefined) return secretArg('api-key', given, instead)
  const fromEnv = process.env[variable]
  if (!fromEnv) throw new Error(`the API key is required: pass "--api-key -" and the key on stdin, or ${instead}`)
  return fromEnv
}
