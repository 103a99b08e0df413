// Model discovery for OpenAI-compatible providers (PRODUCT §17): their own `GET /models`, asked at most
// once a minute per provider, in the background of /v1/models only (never on a chat request's path).

import type { ProviderRecord } from '../domain/org'

/** How long an answer (or a failure) is kept before the provider is asked again. */
export const DISCOVERY_INTERVAL_MS = 60_000
/** Longest wait for a provider's `GET /models`; /v1/models waits this long at most, and only the first time. */
export const DISCOVERY_TIMEOUT_MS = 3000
/** Most model ids kept per provider; larger answers are cut. */
export const DISCOVERY_MAX_MODELS = 1000
/** Most providers remembered (older ones are forgotten first). */
const MAX_TRACKED = 10_000

interface Known {
  at: number
  ids: string[]
  pending: Promise<void> | undefined
}

export class ModelDiscovery {
  private readonly known = new Map<string, Known>()

  constructor(
    private readonly fetcher: typeof fetch,
    private readonly now: () => number = performance.now.bind(performance),
  ) {}

  /**
   * The ids the provider listed at its last answer. A provider never asked before is waited for
   * (at most DISCOVERY_TIMEOUT_MS); a stale answer is served while a fresh one is asked for.
   */
  async models(orgId: string, rec: ProviderRecord, baseUrl: string): Promise<string[]> {
    const key = `${orgId}\u0000${rec.provider}\u0000${rec.name}\u0000${rec.updatedAt}\u0000${baseUrl}`
    let k = this.known.get(key)
    if (!k) {
      if (this.known.size >= MAX_TRACKED) this.known.delete(this.known.keys().next().value as string)
      k = { at: -Infinity, ids: [], pending: undefined }
      this.known.set(key, k)
    }
    const first = k.at === -Infinity
    if (!k.pending && this.now() - k.at >= DISCOVERY_INTERVAL_MS) k.pending = this.refresh(k, rec, baseUrl)
    if (first && k.pending) await k.pending
    return k.ids
  }

  private async refresh(k: Known, rec: ProviderRecord, baseUrl: string): Promise<void> {
    const headers: Record<string, string> = { accept: 'application/json', ...rec.compat?.headers }
    if (rec.apiKey) headers.authorization = `Bearer ${rec.apiKey}`
    try {
      const res = await this.fetcher(`${baseUrl}/models`, { headers, redirect: 'manual', signal: AbortSignal.timeout(DISCOVERY_TIMEOUT_MS) })
      const body = res.ok ? ((await res.json()) as unknown) : undefined
      const data = typeof body === 'object' && body !== null ? (body as { data?: unknown }).data : undefined
      // A failure is remembered like an answer: the provider is asked again a minute later, not at once.
      k.ids = Array.isArray(data)
        ? data.flatMap((m) => (typeof m?.id === 'string' && m.id.length <= 256 ? [m.id as string] : [])).slice(0, DISCOVERY_MAX_MODELS)
        : []
    } catch {
      k.ids = []
    } finally {
      k.at = this.now()
      k.pending = undefined
    }
  }
}
