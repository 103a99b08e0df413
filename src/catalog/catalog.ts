// Model catalog (temporary minimal loader; to be replaced by the full one).

import type { ProviderId } from '../providers/provider-id'
import { PROVIDER_IDS } from '../providers/provider-id'
import builtin from './models.json'
import { readFileSync } from 'node:fs'

export interface ModelPrice { input: number; output: number; cachedInput?: number; cacheWrite?: number }
export interface ModelInfo { contextWindow: number; maxOutput: number; defaultMaxTokens: number; reasoning: boolean; unsupportedParams: readonly string[]; temperatureMax?: number; samplingExclusive: boolean; structuredOutput: 'native' | 'tool'; forcedToolChoice: boolean; price: ModelPrice | null; deprecated?: string }
export interface ResolvedModel { provider: ProviderId; id: string; known: boolean; info: ModelInfo }
export interface UsageForCost { promptTokens: number; completionTokens: number; cachedTokens?: number; cacheWriteTokens?: number }
export interface Catalog { resolve(provider: ProviderId, modelId: string): ResolvedModel; list(provider: ProviderId): ResolvedModel[]; readonly checked: string }

type Raw = { defaults?: Record<string, unknown>; families?: ({ match: string } & Record<string, unknown>)[]; models?: Record<string, Record<string, unknown>> }
const glob = (p: string, v: string) => new RegExp(`^${p.split('*').map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`).test(v)

export function loadCatalog(_extra?: unknown): Catalog {
  const providers = (builtin as unknown as { providers: Record<string, Raw> }).providers
  const cache = new Map<string, ResolvedModel>()
  const resolve = (provider: ProviderId, id: string): ResolvedModel => {
    const k = `${provider}/${id}`
    const hit = cache.get(k)
    if (hit) return hit
    const raw = providers[provider] ?? {}
    const info: Record<string, unknown> = { defaultMaxTokens: 8192, reasoning: false, unsupportedParams: [], samplingExclusive: false, structuredOutput: 'native', forcedToolChoice: true, price: null, ...raw.defaults }
    for (const f of raw.families ?? []) if (glob(f.match, id)) Object.assign(info, f, { match: undefined })
    const m = raw.models?.[id]
    if (m) Object.assign(info, m)
    const r = { provider, id, known: !!m, info: info as unknown as ModelInfo }
    cache.set(k, r)
    return r
  }
  return {
    checked: (builtin as { checked: string }).checked,
    resolve,
    list: (p) => Object.keys(providers[p]?.models ?? {}).map((id) => resolve(p, id)),
  }
}
void PROVIDER_IDS
export function readCatalogFile(path: string): unknown { return JSON.parse(readFileSync(path, 'utf8')) }
export function costUsd(model: ResolvedModel, u: UsageForCost): number | null {
  const p = model.info.price
  if (!p) return null
  const cached = u.cachedTokens ?? 0, write = u.cacheWriteTokens ?? 0
  const fresh = u.promptTokens - cached - write
  return Math.round((fresh * p.input + cached * (p.cachedInput ?? p.input) + write * (p.cacheWrite ?? p.input) + u.completionTokens * p.output) / 1e6 * 1e9) / 1e9
}
