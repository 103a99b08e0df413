// Short-lived in-memory cache of org context (policy, decrypted provider keys, signing secrets) and service keys for the request path.

import { warmTokenizer } from '../policy/prompt-tokens'
import { StoreUnavailableError } from '../store/errors'
import { ORG_ID, type ProviderRecord, type ServiceKeyRecord } from '../domain/org'
import type { Store } from '../store/types'
import type { OrgContext } from './context'

interface Cached<T> {
  at: number
  value: Promise<T>
  /** While `value` is being read again: the entry known before, served if the read takes too long. */
  stale?: Promise<T>
}

/** While the database is unreachable, a stale entry is served and the store asked again after this. */
const RETRY_UNREACHABLE_MS = 1000
/**
 * How long a request waits for a known entry to be read again before the stale one is served: a database
 * that hangs (answers nothing, refuses nothing) must not hold every request. A healthy one answers in
 * milliseconds, so a revoked key or changed policy still applies at once.
 */
const STALE_AFTER_MS = 1000

/**
 * Admin writes through this instance invalidate at once; writes from another process (the CLI,
 * another instance) are seen within `ttlMs`, or at once when a change notice arrives (Redis). While
 * the database is unreachable, orgs and keys already known keep being served from here.
 */
export class OrgDirectory {
  private readonly cache = new Map<string, Cached<OrgContext | undefined>>()
  private readonly keys = new Map<string, Cached<ServiceKeyRecord | undefined>>()

  constructor(
    private readonly store: Store,
    private readonly ttlMs = 2000,
  ) {}

  get(orgId: string): Promise<OrgContext | undefined> {
    // An id that is not org-shaped is never looked up, and misses are not kept: the cache is bounded by the orgs.
    if (!ORG_ID.test(orgId)) return Promise.resolve(undefined)
    return this.cached(this.cache, orgId, () => this.load(orgId))
  }

  /** A service key record by id; unknown ids are not kept, so they always ask the store. */
  serviceKey(id: string): Promise<ServiceKeyRecord | undefined> {
    return this.cached(this.keys, id, () => this.store.keys.getServiceKey(id))
  }

  /**
   * Marks the org and its service keys stale (after an admin change, a revocation, or a change
   * notice): the next request reads them again. Stale entries are kept only to be served while the
   * database is unreachable.
   */
  invalidate(orgId: string): void {
    const org = this.cache.get(orgId)
    if (org) org.at = -Infinity
    for (const k of this.keys.values()) void k.value.then((rec) => rec?.orgId === orgId && (k.at = -Infinity), () => {})
  }

  /** Marks everything stale (change notices may have been missed). */
  invalidateAll(): void {
    for (const e of this.cache.values()) e.at = -Infinity
    for (const e of this.keys.values()) e.at = -Infinity
  }

  private cached<T>(map: Map<string, Cached<T | undefined>>, id: string, load: () => Promise<T | undefined>): Promise<T | undefined> {
    const hit = map.get(id)
    const now = performance.now()
    if (hit && now - hit.at < this.ttlMs) return hit.stale ? orStale(hit.value, hit.stale) : hit.value
    const value = load().then(
      (v) => {
        const entry = map.get(id)
        if (entry?.value === value) {
          if (v === undefined) map.delete(id)
          else delete entry.stale
        }
        return v
      },
      (err: unknown) => {
        // The database is away: what was known is served, and asked for again a second later.
        if (err instanceof StoreUnavailableError && hit) {
          const known = hit.stale ?? hit.value
          map.set(id, { at: performance.now() - this.ttlMs + RETRY_UNREACHABLE_MS, value: known })
          return known
        }
        if (map.get(id)?.value === value) map.delete(id)
        throw err
      },
    )
    if (!hit) {
      map.set(id, { at: now, value })
      return value
    }
    const stale = hit.stale ?? hit.value
    map.set(id, { at: now, value, stale })
    return orStale(value, stale)
  }

  private async load(orgId: string): Promise<OrgContext | undefined> {
    const org = await this.store.orgs.getOrg(orgId)
    if (!org) return undefined
    const providers = new Map<string, ProviderRecord[]>()
    for (const p of await this.store.orgs.getProviders(orgId)) providers.set(p.provider, [...(providers.get(p.provider) ?? []), p])
    if (org.policy.maxPromptTokens !== undefined) void warmTokenizer()
    const routes = new Map((await this.store.routes.getRoutes(orgId)).map((r) => [r.name, r]))
    return { org, providers, routes, signingSecrets: await this.store.auth.listSigningSecrets(orgId) }
  }
}

/** `value`, or `stale` once `value` has taken STALE_AFTER_MS (see there). */
function orStale<T>(value: Promise<T>, stale: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(stale), STALE_AFTER_MS)
  })
  return Promise.race([value, late]).finally(() => clearTimeout(timer))
}
