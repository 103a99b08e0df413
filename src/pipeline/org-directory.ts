// Short-lived in-memory cache of org context (policy, decrypted provider keys and signing secrets) for the request path.

import { warmTokenizer } from '../policy/prompt-tokens'
import type { ProviderId } from '../providers/provider-id'
import type { ProviderRecord, Store } from '../store/types'
import type { OrgContext } from './context'

/**
 * Admin writes through this instance invalidate at once; writes from another process (the CLI,
 * another instance) are seen within `ttlMs`.
 */
export class OrgDirectory {
  private readonly cache = new Map<string, { at: number; value: Promise<OrgContext | undefined> }>()

  constructor(
    private readonly store: Store,
    private readonly ttlMs = 2000,
  ) {}

  get(orgId: string): Promise<OrgContext | undefined> {
    const hit = this.cache.get(orgId)
    const now = performance.now()
    if (hit && now - hit.at < this.ttlMs) return hit.value
    const value = this.load(orgId)
    this.cache.set(orgId, { at: now, value })
    value.catch(() => this.cache.delete(orgId))
    return value
  }

  invalidate(orgId: string): void {
    this.cache.delete(orgId)
  }

  private async load(orgId: string): Promise<OrgContext | undefined> {
    const org = await this.store.orgs.getOrg(orgId)
    if (!org) return undefined
    const providers = new Map<ProviderId, ProviderRecord>()
    for (const p of await this.store.orgs.getProviders(orgId)) providers.set(p.provider, p)
    if (org.policy.maxPromptTokens !== undefined) void warmTokenizer()
    return { org, providers, signingSecrets: await this.store.auth.listSigningSecrets(orgId) }
  }
}
