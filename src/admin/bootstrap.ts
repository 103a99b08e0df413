// First-start set-up: the `default` org, its provider keys from the environment, and (once gw listens) a service key.

import { hashKey, serviceKeyId } from '../auth/service-keys'
import type { Config } from '../config'
import { compatSettings } from '../providers/openai-compatible'
import type { ProviderId } from '../providers/provider-id'
import { StoreConflictError } from '../store/errors'
import type { Store } from '../store/types'
import type { AdminService } from './admin-service'

export const DEFAULT_ORG = 'default'
/** The name a key created from GW_SERVICE_KEY carries; a replaced one is revoked by it. */
const ENV_KEY_NAME = 'GW_SERVICE_KEY'

/** The `default` org exists from the first start (or first CLI command) on. */
export async function ensureDefaultOrg(store: Store): Promise<void> {
  if (!(await store.orgs.getOrg(DEFAULT_ORG))) await alreadyDoneIsFine(store.orgs.createOrg({ id: DEFAULT_ORG, name: 'Default' }))
}

/** Several instances starting together on one database race to create the same records: losing is fine. */
async function alreadyDoneIsFine(write: Promise<unknown>): Promise<void> {
  try {
    await write
  } catch (err) {
    if (!(err instanceof StoreConflictError)) throw err
  }
}

/** The `default` org, its provider keys from the environment, and GW_SERVICE_KEY when set. */
export async function bootstrap(store: Store, config: Config): Promise<void> {
  await ensureDefaultOrg(store)

  // Environment keys are the default org's keys named `default`.
  const current = new Map((await store.orgs.getProviders(DEFAULT_ORG)).filter((p) => p.name === 'default').map((p) => [p.provider, p]))
  for (const [provider, apiKey] of Object.entries(config.envProviderKeys) as [ProviderId, string][]) {
    const rec = current.get(provider)
    if (rec?.apiKey === apiKey) continue
    await store.orgs.putProvider(DEFAULT_ORG, {
      provider,
      name: 'default',
      apiKey,
      baseUrl: rec?.baseUrl,
      enabled: rec?.enabled ?? true,
      weight: rec?.weight ?? 1,
    })
  }

  // OpenAI-compatible presets from GW_<NAME>_BASE_URL / <NAME>_API_KEY (PRODUCT §17); what an admin set besides (quirks, models, headers) is kept.
  for (const p of config.envPresets) {
    const rec = (await store.orgs.getProviders(DEFAULT_ORG)).find((r) => r.provider === p.name && r.name === 'default')
    if (rec?.compat && rec.apiKey === p.apiKey && rec.baseUrl === p.baseUrl) continue
    await store.orgs.putProvider(DEFAULT_ORG, {
      provider: p.name,
      name: 'default',
      apiKey: p.apiKey,
      baseUrl: p.baseUrl,
      enabled: rec?.enabled ?? true,
      weight: rec?.weight ?? 1,
      compat: rec?.compat ?? compatSettings(p.name, {}),
    })
  }

  if (!config.envServiceKey) return
  const keys = await store.keys.listServiceKeys(DEFAULT_ORG)
  const id = serviceKeyId(config.envServiceKey)
  const existing = await store.keys.getServiceKey(id)
  if (!existing)
    await alreadyDoneIsFine(store.keys.createServiceKey({ id, orgId: DEFAULT_ORG, name: ENV_KEY_NAME, hash: hashKey(config.envServiceKey) }))
  // A GW_SERVICE_KEY that was replaced in the environment stops working: the old one is revoked.
  for (const k of keys) if (k.name === ENV_KEY_NAME && k.id !== id && !k.revokedAt) await store.keys.revokeServiceKey(DEFAULT_ORG, k.id)
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
  const another = 'another one at any time: gw key create [--name NAME] (on the same database)'
  if (json)
    return JSON.stringify({ time: new Date().toISOString(), msg: `created a service key for the "default" org; it is shown only now, keep it (${another})`, serviceKey: key })
  return (
    `gw: created a service key for the "default" org. It is shown only now, keep it:\n\n    ${key}\n\n` +
    `    curl ${url}/v1/chat/completions -H "Authorization: GwKey ${key}" ...\n    (${another})\n`
  )
}
