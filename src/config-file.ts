// GW_CONFIG: provider keys and routes given as a YAML file (PRODUCT §13), checked whole at start —
// errors name the file, the line and the field — then written to the store, like prompts as code.

import { readFileSync } from 'node:fs'
import { checkProviderKey, checkRoute, publicProvider } from './admin/admin-service'
import { AuditLog, asActor } from './admin/audit'
import { publicMcpServer } from './mcp/records'
import { ConfigError } from './config'
import { GatewayError } from './errors'
import { dotted, pathOf } from './schemas/problems'
import type { ProviderRecord, Route } from './domain/org'
import type { Store } from './store/types'
import { checkMcpServer, type McpServerRecord } from './mcp/records'

/** One org's part of the file. */
export interface OrgConfig {
  orgId: string
  keys: Omit<ProviderRecord, 'updatedAt'>[]
  routes: Omit<Route, 'updatedAt'>[]
  /** Upstream MCP servers (PRODUCT §20). */
  mcpServers: Omit<McpServerRecord, 'updatedAt'>[]
}

const isMap = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const ORG_ID = /^[a-z0-9][a-z0-9_-]{0,63}$/

/**
 * The line of a field, found by walking its path through the text: each key is looked for below
 * the line of its parent, each list index as the n-th `-` item there. Good enough to point at the
 * right place in a hand-written file; 0 when not found.
 */
function lineOf(text: string, path: (string | number)[]): number {
  const lines = text.split('\n')
  let at = 0
  let indent = -1
  for (const seg of path) {
    let found = -1
    let seen = -1
    for (let i = at + (indent < 0 ? 0 : 1); i < lines.length; i++) {
      const line = lines[i] as string
      if (!line.trim() || line.trimStart().startsWith('#')) continue
      const ind = line.length - line.trimStart().length
      if (indent >= 0 && ind <= indent && !line.trimStart().startsWith('-')) break
      if (typeof seg === 'number') {
        if (line.trimStart().startsWith('-') && ++seen === seg) found = i
      } else if (new RegExp(`^\\s*(- )?["']?${seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}["']?\\s*:`).test(line)) found = i
      if (found >= 0) {
        indent = ind
        break
      }
    }
    if (found < 0) return at + 1
    at = found
  }
  return at + 1
}

/**
 * The file's shape: top-level `providers` and `routes` belong to the `default` org, `orgs.<id>`
 * holds the same two for other orgs.
 *
 *     providers:
 *       openai:
 *         - name: primary
 *           apiKeyEnv: OPENAI_KEY_PRIMARY     # or apiKey: sk-…
 *           weight: 3
 *     routes:
 *       fast:
 *         targets: [{model: openai/gpt-4o-mini, weight: 3}, {model: mistral/mistral-small-latest}]
 *     mcpServers:
 *       github:
 *         url: https://api.githubcopilot.com/mcp/
 *         auth: {kind: oauth}
 *       search:
 *         url: http://127.0.0.1:8931/mcp
 *         auth: {kind: bearer, tokenEnv: SEARCH_MCP_TOKEN}   # or token: …
 */
export function readConfigFile(path: string, env: Record<string, string | undefined> = process.env): OrgConfig[] {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    throw new ConfigError(`GW_CONFIG: cannot read ${path}: ${err instanceof Error ? err.message : err}`)
  }
  let doc: unknown
  try {
    doc = Bun.YAML.parse(text)
  } catch (err) {
    throw new ConfigError(`GW_CONFIG: ${path} is not valid YAML: ${err instanceof Error ? err.message : err}`)
  }
  const fail = (at: (string | number)[], message: string): never => {
    throw new ConfigError(`GW_CONFIG: ${path}:${lineOf(text, at)}: ${dotted(at)}: ${message}`)
  }
  const checked = <T>(at: (string | number)[], check: () => T): T => {
    try {
      return check()
    } catch (err) {
      // The check's first problem names the field at fault within the entry (src/schemas/problems.ts).
      if (err instanceof GatewayError) return fail([...at, ...pathOf(err.problems?.[0]?.field ?? '')], err.message)
      throw err
    }
  }
  if (doc === null || doc === undefined) return []
  if (!isMap(doc)) return fail([], 'expected a mapping with providers, routes and orgs')

  const orgOf = (orgId: string, raw: Record<string, unknown>, at: (string | number)[]): OrgConfig => {
    for (const k of Object.keys(raw)) if (k !== 'providers' && k !== 'routes' && k !== 'mcpServers' && !(at.length === 0 && k === 'orgs')) fail([...at, k], 'unknown field (providers, routes, mcpServers, orgs)')
    const org: OrgConfig = { orgId, keys: [], routes: [], mcpServers: [] }
    const providers = raw.providers ?? {}
    if (!isMap(providers)) fail([...at, 'providers'], 'expected a mapping of provider → list of keys')
    for (const [provider, keys] of Object.entries(providers as Record<string, unknown>)) {
      if (!Array.isArray(keys)) fail([...at, 'providers', provider], 'expected a list of keys ({name, apiKey or apiKeyEnv, weight?, baseUrl?, enabled?})')
      ;(keys as unknown[]).forEach((k, i) => {
        const here = [...at, 'providers', provider, i]
        if (!isMap(k)) return fail(here, 'expected a mapping')
        const { name, apiKeyEnv, ...body } = k
        if (typeof name !== 'string') return fail([...here, 'name'], 'required: the key name')
        if (apiKeyEnv !== undefined) {
          if (body.apiKey !== undefined) fail([...here, 'apiKeyEnv'], 'give apiKey or apiKeyEnv, not both')
          const value = typeof apiKeyEnv === 'string' ? env[apiKeyEnv] : undefined
          if (!value) fail([...here, 'apiKeyEnv'], `the environment variable ${String(apiKeyEnv)} is not set`)
          body.apiKey = value
        }
        org.keys.push(checked(here, () => checkProviderKey(provider, name, body)))
      })
    }
    const routes = raw.routes ?? {}
    if (!isMap(routes)) fail([...at, 'routes'], 'expected a mapping of route name → {targets, strategy?, fallback?}')
    for (const [name, body] of Object.entries(routes as Record<string, unknown>))
      org.routes.push(checked([...at, 'routes', name], () => checkRoute(name, body)))
    const servers = raw.mcpServers ?? {}
    if (!isMap(servers)) fail([...at, 'mcpServers'], 'expected a mapping of server name → {url, headers?, auth?, enabled?}')
    for (const [name, body] of Object.entries(servers as Record<string, unknown>)) {
      const here = [...at, 'mcpServers', name]
      const auth = isMap(body) && isMap(body.auth) ? body.auth : undefined
      // A bearer secret may come from the environment, like a provider key.
      if (auth && auth.tokenEnv !== undefined) {
        if (auth.token !== undefined) fail([...here, 'auth', 'tokenEnv'], 'give token or tokenEnv, not both')
        const value = typeof auth.tokenEnv === 'string' ? env[auth.tokenEnv] : undefined
        if (!value) fail([...here, 'auth', 'tokenEnv'], `the environment variable ${String(auth.tokenEnv)} is not set`)
        const { tokenEnv: _, ...rest } = auth
        ;(body as Record<string, unknown>).auth = { ...rest, token: value }
      }
      org.mcpServers.push(checked(here, () => checkMcpServer(name, body)))
    }
    return org
  }

  const out = [orgOf('default', doc, [])]
  const orgs = doc.orgs ?? {}
  if (!isMap(orgs)) fail(['orgs'], 'expected a mapping of org id → {providers, routes}')
  for (const [orgId, raw] of Object.entries(orgs as Record<string, unknown>)) {
    if (!ORG_ID.test(orgId)) fail(['orgs', orgId], 'org ids are lowercase letters, digits, "-" and "_", at most 64')
    if (!isMap(raw)) fail(['orgs', orgId], 'expected a mapping with providers and routes')
    out.push(orgOf(orgId, raw as Record<string, unknown>, ['orgs', orgId]))
  }
  return out
}

/**
 * Writes the file's keys and routes (creating orgs it names); what the store had besides stays. What
 * the file changed (not what it set again as it was) goes into the audit log, as made by the config file.
 */
export async function applyConfigFile(store: Store, orgs: OrgConfig[], audit = new AuditLog(store.audit)): Promise<void> {
  await asActor({ kind: 'config-file' }, async () => {
    for (const o of orgs) {
      if (!o.keys.length && !o.routes.length && !o.mcpServers.length) continue
      if (!(await store.orgs.getOrg(o.orgId))) {
        await store.orgs.createOrg({ id: o.orgId, name: o.orgId })
        await audit.record({ action: 'org.create', org: o.orgId, target: `org:${o.orgId}`, before: null, after: { id: o.orgId, name: o.orgId } })
      }
      const providers = await store.orgs.getProviders(o.orgId)
      for (const k of o.keys) {
        const old = providers.find((p) => p.provider === k.provider && p.name === k.name)
        const rec = await store.orgs.putProvider(o.orgId, k)
        const before = old && publicProvider(old)
        const after = publicProvider(rec)
        if (old?.apiKey === rec.apiKey && sameApart(before, after)) continue
        await audit.record({ action: 'provider.set', org: o.orgId, target: `provider:${k.provider}/${k.name}`, before: before ?? null, after })
      }
      const routes = await store.routes.getRoutes(o.orgId)
      for (const r of o.routes) {
        const old = routes.find((x) => x.name === r.name)
        const route = await store.routes.putRoute(o.orgId, r)
        if (sameApart(old, route)) continue
        await audit.record({ action: 'route.set', org: o.orgId, target: `route:${r.name}`, before: old ?? null, after: route })
      }
      const servers = await store.mcp.getServers(o.orgId)
      for (const m of o.mcpServers) {
        const old = servers.find((x) => x.name === m.name)
        const rec = await store.mcp.putServer(o.orgId, m)
        const [before, after] = [old && publicMcpServer(old), publicMcpServer(rec)]
        // What the public form masks (header values, secrets, the URL's query) is compared as stored.
        if (JSON.stringify([old?.headers, old?.auth, old?.url]) === JSON.stringify([rec.headers, rec.auth, rec.url]) && sameApart(before, after)) continue
        await audit.record({ action: 'mcp-server.set', org: o.orgId, target: `mcp-server:${m.name}`, before: before ?? null, after })
      }
    }
  })
}

/** Whether two records hold the same, their `updatedAt` apart. */
function sameApart(a: object | undefined, b: object): boolean {
  const text = (x: object) => JSON.stringify(x, (k, v) => (k === 'updatedAt' ? undefined : v))
  return a !== undefined && text(a) === text(b)
}
