// The model catalog: limits, parameter rules and prices per model (models.json, merged with GW_CATALOG),
// resolved as provider defaults < matching family rules < the model's own entry.

import { readFileSync } from 'node:fs'
import type { Usage } from '../providers/openai-types'
import { modelName, PROVIDER_IDS, type ProviderId } from '../providers/provider-id'
import builtin from './models.json'

/** USD per million tokens of each kind a provider bills. */
export interface TokenPrices {
  input: number
  output: number
  /** Input read from the provider's cache; `input` when absent. */
  cachedInput?: number
  /** Input written to the provider's cache; `input` when absent. */
  cacheWrite?: number
  /** Reasoning (thinking) output; `output` when absent. */
  reasoning?: number
}

/** A long-context tier: the whole request is billed at these prices once its prompt exceeds `aboveInputTokens`. */
export interface PriceTier extends TokenPrices {
  aboveInputTokens: number
}

export interface ModelPrice extends TokenPrices {
  /** Ascending by threshold; the highest one the prompt exceeds applies. */
  tiers?: PriceTier[]
}

export interface ModelInfo {
  contextWindow: number
  maxOutput: number
  /** Sent when the provider requires an output limit (Anthropic) and the client gave none. */
  defaultMaxTokens: number
  /** OpenAI reasoning models: `max_completion_tokens`, no sampling parameters. */
  reasoning: boolean
  /** OpenAI-request parameters the model refuses; removed before sending. */
  unsupportedParams: readonly string[]
  /** gpt-5.1+/gpt-6 take temperature/top_p/logprobs again when `reasoning_effort` is `none`. */
  samplingWithReasoningNone: boolean
  temperatureMax?: number
  /** Refuses temperature together with top_p (some Claude 4.5 models). */
  samplingExclusive: boolean
  /** Anthropic JSON output: native `output_config.format`, or a forced tool. */
  structuredOutput: 'native' | 'tool'
  /** What the model does: chat (chat completions, Messages, Responses) or embeddings (/v1/embeddings). */
  kind: 'chat' | 'embeddings'
  /** False for models that reject a forced tool choice (`tool`/`any`). */
  forcedToolChoice: boolean
  /** USD per million tokens; null when unknown (cost is then recorded as unknown, never 0). */
  price: ModelPrice | null
  deprecated?: string
}

/**
 * The catalog's sections: the four's, Bedrock's (model ids as Bedrock names them), and the remote presets
 * whose prices gw lists (docs/spend.md, "Prices of the other providers").
 */
export const CATALOG_SECTIONS = [...PROVIDER_IDS, 'bedrock', 'groq', 'deepseek', 'xai'] as const
export type CatalogSection = (typeof CATALOG_SECTIONS)[number]

export const isCatalogSection = (name: string): name is CatalogSection => (CATALOG_SECTIONS as readonly string[]).includes(name)

export interface ResolvedModel {
  provider: CatalogSection
  id: string
  /** `provider/model-id` (modelName). */
  name: string
  /** Listed in the catalog (an unlisted id is still routed, with its provider's defaults). */
  known: boolean
  info: ModelInfo
}

export interface UsageForCost {
  promptTokens: number
  completionTokens: number
  /** Part of promptTokens, read from the provider's cache. */
  cachedTokens?: number
  /** Part of promptTokens, written to the provider's cache. */
  cacheWriteTokens?: number
  /** Part of completionTokens spent on reasoning. */
  reasoningTokens?: number
}

export interface Catalog {
  resolve(provider: CatalogSection, modelId: string): ResolvedModel
  /** The listed models of a provider, in file order. */
  list(provider: CatalogSection): ResolvedModel[]
  readonly checked: string
  /** Version of the price table (built-in, plus GW_CATALOG's when it sets one); stored on every log entry. */
  readonly priceVersion: string
}

type Fields = Record<string, unknown>
interface ProviderSection {
  defaults: Fields
  families: { match: string; fields: Fields }[]
  models: Map<string, Fields>
}

const BASE: ModelInfo = {
  contextWindow: 128_000,
  maxOutput: 16_384,
  defaultMaxTokens: 8192,
  reasoning: false,
  unsupportedParams: [],
  samplingWithReasoningNone: false,
  samplingExclusive: false,
  structuredOutput: 'native',
  kind: 'chat',
  forcedToolChoice: true,
  price: null,
}

/**
 * A model the catalog cannot know: one of an OpenAI-compatible provider's (PRODUCT §17), spoken to
 * with `wire`'s adapter, with general defaults and the provider record's price (null: unknown).
 */
export function outsideCatalog(wire: ProviderId, name: string, id: string, price: TokenPrices | undefined): ResolvedModel {
  return { provider: wire, id, name, known: false, info: { ...BASE, price: price ?? null } }
}

const isObject = (v: unknown): v is Fields => typeof v === 'object' && v !== null && !Array.isArray(v)

/** Checks the fields of one model/family/defaults entry; throws naming the path of the first bad one. */
function checkFields(f: Fields, at: string): Fields {
  const num = (k: string) => {
    if (f[k] !== undefined && (typeof f[k] !== 'number' || !((f[k] as number) >= 0))) throw new Error(`${at}.${k} must be a number ≥ 0`)
  }
  const bool = (k: string) => {
    if (f[k] !== undefined && typeof f[k] !== 'boolean') throw new Error(`${at}.${k} must be true or false`)
  }
  for (const k of ['contextWindow', 'maxOutput', 'defaultMaxTokens', 'temperatureMax']) num(k)
  for (const k of ['reasoning', 'samplingWithReasoningNone', 'samplingExclusive', 'forcedToolChoice']) bool(k)
  const u = f.unsupportedParams
  if (u !== undefined && !(Array.isArray(u) && u.every((x) => typeof x === 'string')))
    throw new Error(`${at}.unsupportedParams must be a list of parameter names`)
  if (f.structuredOutput !== undefined && f.structuredOutput !== 'native' && f.structuredOutput !== 'tool')
    throw new Error(`${at}.structuredOutput must be "native" or "tool"`)
  if (f.kind !== undefined && f.kind !== 'chat' && f.kind !== 'embeddings') throw new Error(`${at}.kind must be "chat" or "embeddings"`)
  if (f.aliasOf !== undefined && typeof f.aliasOf !== 'string') throw new Error(`${at}.aliasOf must be a model id`)
  const price = f.price
  if (price !== undefined && price !== null) {
    checkPrices(price, `${at}.price`)
    const tiers = (price as Fields).tiers
    if (tiers !== undefined) {
      if (!Array.isArray(tiers)) throw new Error(`${at}.price.tiers must be a list`)
      let last = 0
      tiers.forEach((tier, i) => {
        const t = checkPrices(tier, `${at}.price.tiers[${i}]`)
        const above = t.aboveInputTokens
        if (typeof above !== 'number' || !Number.isInteger(above) || above <= last)
          throw new Error(`${at}.price.tiers[${i}].aboveInputTokens must be a whole number above the previous tier's`)
        last = above
      })
    }
  }
  return f
}

function checkPrices(price: unknown, at: string): Fields {
  if (!isObject(price)) throw new Error(`${at} must be an object`)
  for (const k of ['input', 'output', 'cachedInput', 'cacheWrite', 'reasoning']) {
    const v = price[k]
    const required = k === 'input' || k === 'output'
    if ((required || v !== undefined) && (typeof v !== 'number' || !(v >= 0)))
      throw new Error(`${at}.${k} must be a number ≥ 0 (USD per 1M tokens)`)
  }
  return price
}

/** Merges a catalog document (built-in or a user's) into the sections. */
function mergeDocument(sections: Map<CatalogSection, ProviderSection>, doc: unknown, name: string): void {
  if (!isObject(doc) || !isObject(doc.providers)) throw new Error(`${name}: expected {"providers": {…}}`)
  for (const [p, raw] of Object.entries(doc.providers)) {
    const at = `${name}: providers.${p}`
    const section = sections.get(p as CatalogSection)
    if (!section) throw new Error(`${at}: unknown provider (${CATALOG_SECTIONS.join(', ')})`)
    if (!isObject(raw)) throw new Error(`${at} must be an object`)
    if (raw.defaults !== undefined) {
      if (!isObject(raw.defaults)) throw new Error(`${at}.defaults must be an object`)
      Object.assign(section.defaults, checkFields(raw.defaults, `${at}.defaults`))
    }
    if (raw.families !== undefined) {
      if (!Array.isArray(raw.families)) throw new Error(`${at}.families must be a list`)
      raw.families.forEach((f, i) => {
        if (!isObject(f) || typeof f.match !== 'string') throw new Error(`${at}.families[${i}] needs a "match" glob`)
        const { match, ...fields } = f
        section.families.push({ match: match as string, fields: checkFields(fields, `${at}.families[${i}]`) })
      })
    }
    if (raw.models !== undefined) {
      if (!isObject(raw.models)) throw new Error(`${at}.models must be an object`)
      for (const [id, m] of Object.entries(raw.models)) {
        if (!isObject(m)) throw new Error(`${at}.models.${id} must be an object`)
        const { source: _source, ...fields } = checkFields(m, `${at}.models.${id}`)
        section.models.set(id, { ...section.models.get(id), ...fields })
      }
    }
  }
}

function globRegExp(pattern: string): RegExp {
  return new RegExp(`^${pattern.split('*').map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`)
}

export function loadCatalog(extra?: unknown): Catalog {
  const sections = new Map<CatalogSection, ProviderSection>(
    CATALOG_SECTIONS.map((p) => [p, { defaults: {}, families: [], models: new Map() }]),
  )
  mergeDocument(sections, builtin, 'built-in catalog')
  let priceVersion = builtin.priceVersion
  if (extra !== undefined) {
    mergeDocument(sections, extra, 'GW_CATALOG')
    const own = (extra as Fields).priceVersion
    if (own !== undefined && typeof own !== 'string') throw new Error('GW_CATALOG: priceVersion must be a string')
    priceVersion = own ? `${priceVersion}+${own}` : `${priceVersion}+custom`
  }
  const patterns = new Map<string, RegExp>()
  const cache = new Map<string, ResolvedModel>()

  const ownFields = (section: ProviderSection, id: string, seen = new Set<string>()): Fields | undefined => {
    const m = section.models.get(id)
    if (!m || typeof m.aliasOf !== 'string' || seen.has(id)) return m
    seen.add(id)
    const { aliasOf, ...rest } = m
    return { ...ownFields(section, aliasOf as string, seen), ...rest }
  }

  const resolve = (provider: CatalogSection, id: string): ResolvedModel => {
    const key = modelName(provider, id)
    const hit = cache.get(key)
    if (hit) return hit
    const section = sections.get(provider) as ProviderSection
    const info: Fields = { ...BASE, ...section.defaults }
    for (const f of section.families) {
      let re = patterns.get(f.match)
      if (!re) patterns.set(f.match, (re = globRegExp(f.match)))
      if (re.test(id)) Object.assign(info, f.fields)
    }
    const own = ownFields(section, id)
    if (own) Object.assign(info, own)
    delete info.aliasOf
    const resolved: ResolvedModel = { provider, id, name: key, known: own !== undefined, info: info as unknown as ModelInfo }
    if (cache.size < 10_000) cache.set(key, resolved)
    return resolved
  }

  return {
    checked: typeof builtin.checked === 'string' ? builtin.checked : 'unknown',
    priceVersion,
    resolve,
    list: (provider) => [...(sections.get(provider)?.models.keys() ?? [])].map((id) => resolve(provider, id)),
  }
}

/** Reads and parses a GW_CATALOG file; errors name the path. */
export function readCatalogFile(path: string): unknown {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    throw new Error(`GW_CATALOG: cannot read ${path}: ${err instanceof Error ? err.message : err}`)
  }
  try {
    return JSON.parse(text)
  } catch (err) {
    throw new Error(`GW_CATALOG: ${path} is not valid JSON: ${err instanceof Error ? err.message : err}`)
  }
}

/** The token kinds of an OpenAI-shaped usage (what every adapter reports). */
export function usageTokens(u: Usage | null): Required<UsageForCost> {
  return {
    promptTokens: u?.prompt_tokens ?? 0,
    completionTokens: u?.completion_tokens ?? 0,
    cachedTokens: u?.prompt_tokens_details?.cached_tokens ?? 0,
    cacheWriteTokens: u?.prompt_tokens_details?.cache_write_tokens ?? 0,
    reasoningTokens: u?.completion_tokens_details?.reasoning_tokens ?? 0,
  }
}

/** The prices that apply to a prompt of this size: the highest long-context tier it exceeds, else the base. */
export function pricesFor(price: ModelPrice, promptTokens: number): TokenPrices {
  let applied: TokenPrices = price
  for (const tier of price.tiers ?? []) if (promptTokens > tier.aboveInputTokens) applied = tier
  return applied
}

/**
 * USD cost of a request; null when the model's price is unknown. The token kinds are disjoint:
 * fresh input, cached input, cache writes (parts of promptTokens), reasoning and the rest of the
 * output (parts of completionTokens).
 */
export function costUsd(model: ResolvedModel, usage: UsageForCost): number | null {
  if (!model.info.price) return null
  const p = pricesFor(model.info.price, usage.promptTokens)
  const cached = usage.cachedTokens ?? 0
  const written = usage.cacheWriteTokens ?? 0
  const fresh = Math.max(0, usage.promptTokens - cached - written)
  const reasoning = Math.min(usage.reasoningTokens ?? 0, usage.completionTokens)
  const output = usage.completionTokens - reasoning
  const usd =
    (fresh * p.input +
      cached * (p.cachedInput ?? p.input) +
      written * (p.cacheWrite ?? p.input) +
      output * p.output +
      reasoning * (p.reasoning ?? p.output)) /
    1e6
  return Math.round(usd * 1e9) / 1e9
}
