// First-start set-up: the `default` org, its provider keys from the environment, and (once gw listens) a service key.

import { hashKey, serviceKeyId } from '../auth/service-keys'
import type { Config } from '../config'
import { compatSettings } from '../providers/openai-compatible'
import type { ProviderId } from '../providers/provider-id'
import { StoreConflictError } from '../store/errors'
import type { Store } from '../store/types'
import { GW_COMMAND } from '../cli/args'
import { type AdminService, publicProvider } from './admin-service'
import { AuditLog, asActor } from './audit'

export const DEFAULT_ORG = 'default'
/** The name a key created from GW_SERVICE_KEY carries; a replaced one is revoked by it. */
const ENV_KEY_NAME = 'GW_SERVICE_KEY'

/** The `default` org exists from the first start (or first CLI command) on. */
export async function ensureDefaultOrg(store: Store): Promise<void> {
  if (!(await store.orgs.getOrg(DEFAULT_ORG))) await alreadyDoneIsFine(store.orgs.createOrg({ id: DEFAULT_ORG, name: 'Default' }))
}

/** Several instances starting together on one database race to create the same records: losing is fine (false). */
async function alreadyDoneIsFine(write: Promise<unknown>): Promise<boolean> {
  try {
    await write
    return true
  } catch (err) {
    if (!(err instanceof StoreConflictError)) throw err
    return false
  }
}

/**
 * The `default` org, its provider keys from the environment, and GW_SERVICE_KEY when set. What the
 * environment changed goes into the audit log, as configuration (`config-file`, like GW_CONFIG).
 */
export async function bootstrap(store: Store, config: Config, audit = new AuditLog(store.audit)): Promise<void> {
  await asActor({ kind: 'config-file' }, () => applyEnvironment(store, config, audit))
}

async function applyEnvironment(store: Store, config: Config, audit: AuditLog): Promise<void> {
  await ensureDefaultOrg(store)

  // Environment keys are the default org's keys named `default`.
  const current = new Map((await store.orgs.getProviders(DEFAULT_ORG)).filter((p) => p.name === 'default').map((p) => [p.provider, p]))
  for (const [provider, apiKey] of Object.entries(config.envProviderKeys) as [ProviderId, string][]) {
    const rec = current.get(provider)
    if (rec?.apiKey === apiKey) continue
    const after = await store.orgs.putProvider(DEFAULT_ORG, {
      provider,
      name: 'default',
      apiKey,
      baseUrl: rec?.baseUrl,
      enabled: rec?.enabled ?? true,
      weight: rec?.weight ?? 1,
    })
    await audit.record({ action: 'provider.set', org: DEFAULT_ORG, target: `provider:${provider}/default`, before: rec ? publicProvider(rec) : null, after: publicProvider(after) })
  }

  // OpenAI-compatible presets from GW_<NAME>_BASE_URL / <NAME>_API_KEY (PRODUCT §17); what an admin set besides (quirks, models, headers) is kept.
  for (const p of config.envPresets) {
    const rec = (await store.orgs.getProviders(DEFAULT_ORG)).find((r) => r.provider === p.name && r.name === 'default')
    if (rec?.compat && rec.apiKey === p.apiKey && rec.baseUrl === p.baseUrl) continue
    const after = await store.orgs.putProvider(DEFAULT_ORG, {
      provider: p.name,
      name: 'default',
      apiKey: p.apiKey,
      baseUrl: p.baseUrl,
      enabled: rec?.enabled ?? true,
      weight: rec?.weight ?? 1,
      compat: rec?.compat ?? compatSettings(p.name, {}),
    })
    await audit.record({ action: 'provider.set', org: DEFAULT_ORG, target: `provider:${p.name}/default`, before: rec ? publicProvider(rec) : null, after: publicProvider(after) })
  }

  if (!config.envServiceKey) return
  const keys = await store.keys.listServiceKeys(DEFAULT_ORG)
  const id = serviceKeyId(config.envServiceKey)
  const existing = await store.keys.getServiceKey(id)
  if (!existing && (await alreadyDoneIsFine(store.keys.createServiceKey({ id, orgId: DEFAULT_ORG, name: ENV_KEY_NAME, hash: hashKey(config.envServiceKey) }))))
    await audit.record({ action: 'service-key.create', org: DEFAULT_ORG, target: `service-key:${id}`, before: null, after: { id, name: ENV_KEY_NAME } })
  // A GW_SERVICE_KEY that was replaced in the environment stops working: the old one is revoked.
  for (const k of keys)
    if (k.name === ENV_KEY_NAME && k.id !== id && !k.revokedAt && (await store.keys.revokeServiceKey(DEFAULT_ORG, k.id)))
      await audit.record({ action: 'service-key.revoke', org: DEFAULT_ORG, target: `service-key:${k.id}`, before: { id: k.id, name: k.name }, after: { id: k.id, revoked: true } })
}

/**
 * The `default` org's first service key, when it has none and GW_SERVICE_KEY is unset. Called only
 * once gw listens, and printed by that start: a start that cannot listen creates nothing, so the next
 * one that does still makes (and shows) the key.
 */
export async function createFirstKey(store: Store, admin: AdminService, config: Config): Promise<string | undefined> {
  if (config.envServiceKey || (await store.keys.listServiceKeys(DEFAULT_ORG)).length) return undefined
  return (await admin.createServiceKey(DEFAULT_ORG, { name: 'generated on first start' })).key
}

/** What gw prints about the key it generated (once: only its hash is stored). */
export function firstKeyNotice(key: string, url: string, json: boolean): string {
  const another = `another one at any time: ${GW_COMMAND} key create [--name NAME] (on the same database)`
  if (json)
    return JSON.stringify({ time: new Date().toISOString(), msg: `created a service key for the "default" org; it is shown only now, keep it (${another})`, serviceKey: key })
  return (
    `gw: created a service key for the "default" org. It is shown only now, keep it:\n\n    ${key}\n\n` +
    `    curl ${url}/v1/chat/completions -H "Authorization: GwKey ${key}" ...\n    (${another})\n`
  )
}
