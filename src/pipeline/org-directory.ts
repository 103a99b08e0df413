// Short-lived in-memory cache of org context (policy, decrypted provider keys, signing secrets) and service keys for the request path.

import { warmTokenizer } from '../policy/prompt-tokens'
import type { ProviderId } from '../providers/provider-id'
import { ORG_ID, type ProviderRecord, type ServiceKeyRecord, type Store } from '../store/types'
import type { OrgContext } from './context'

/**
 * Admin writes through this instance invalidate at once; writes from another process (the CLI,
 * another instance) are seen within `ttlMs`. Only orgs that exist are kept: an id that is not
 * org-shaped is never looked up, and a miss is forgotten as soon as it is answered, so the
 * cache is bounded by the number of orgs whatever ids callers name.
 */
export class OrgDirectory {
  private readonly cache = new Map<string, { at: number; value: Promise<OrgContext | undefined> }>()
  private readonly keys = new Map<string, { at: number; rec: ServiceKeyRecord }>()

  constructor(
    private readonly store: Store,
    private readonly ttlMs = 2000,
  ) {}

  get(orgId: string): Promise<OrgContext | undefined> {
    if (!ORG_ID.test(orgId)) return Promise.resolve(undefined)
    const hit = this.cache.get(orgId)
    const now = performance.now()
    if (hit && now - hit.at < this.ttlMs) return hit.value
    const value = this.load(orgId)
    this.cache.set(orgId, { at: now, value })
    const forget = () => {
      if (this.cache.get(orgId)?.value === value) this.cache.delete(orgId)
    }
    value.then((org) => org ?? forget(), forget)
    return value
  }

  /** A service key record by id; only keys that exist are cached, so unknown ids always ask the store. */
  async serviceKey(id: string): Promise<ServiceKeyRecord | undefined> {
    const hit = this.keys.get(id)
    const now = performance.now()
    if (hit && now - hit.at < this.ttlMs) return hit.rec
    const rec = await this.store.keys.getServiceKey(id)
    if (rec) this.keys.set(id, { at: now, rec })
    else this.keys.delete(id)
    return rec
  }

  /** Drops the org and its service keys (after an admin change or a revocation on this instance). */
  invalidate(orgId: string): void {
    this.cache.delete(orgId)
    for (const [id, k] of this.keys) if (k.rec.orgId === orgId) this.keys.delete(id)
  }

  private async load(orgId: string): Promise<OrgContext | undefined> {
    const org = await this.store.orgs.getOrg(orgId)
    if (!org) return undefined
    const providers = new Map<ProviderId, ProviderRecord[]>()
    for (const p of await this.store.orgs.getProviders(orgId)) providers.set(p.provider, [...(providers.get(p.provider) ?? []), p])
    if (org.policy.maxPromptTokens !== undefined) void warmTokenizer()
    const routes = new Map((await this.store.routes.getRoutes(orgId)).map((r) => [r.name, r]))
    return { org, providers, routes, signingSecrets: await this.store.auth.listSigningSecrets(orgId) }
  }
}
