// Stage 4: fit the request to one target — drop what the model refuses, clamp into its ranges,
// fill what the provider requires — and express structured output as OpenAI `response_format`.

import type { ProviderAdapter, Target } from '../providers/adapter'
import { kindOf } from '../providers/registry'
import type { ChatRequest, ResponseFormat } from '../providers/openai-types'
import type { RequestWarning } from '../domain/log-entry'
import type { ChatInput, OutputSchema } from './context'

const SAMPLING = new Set(['temperature', 'top_p', 'logprobs', 'top_logprobs'])

export interface Prepared {
  body: ChatRequest
  warnings: RequestWarning[]
}

export function toResponseFormat(out: OutputSchema): ResponseFormat {
  if (out.mode === 'json_object' || !out.schema) return { type: 'json_object' }
  return { type: 'json_schema', json_schema: { name: 'output', schema: out.schema } }
}

export function clamp(input: ChatInput, target: Target, adapter: ProviderAdapter): Prepared {
  const info = target.model.info
  const body: ChatRequest = { ...input.body, model: target.model.id }
  const warnings: RequestWarning[] = []
  const name = target.model.name
  if (input.outputSchema) body.response_format = toResponseFormat(input.outputSchema)
  if (input.stream) body.stream = true
  else delete body.stream
  // What the provider's kind cannot take is refused or relaxed (an OpenAI-compatible provider's quirks).
  const fit = kindOf(target).fit
  if (fit) warnings.push(...fit(body, target))

  // gpt-5.1+ and gpt-6 take sampling parameters again when reasoning is switched off.
  const samplingBack = info.samplingWithReasoningNone && body.reasoning_effort === 'none'
  for (const p of info.unsupportedParams) {
    if (body[p] === undefined || (samplingBack && SAMPLING.has(p))) continue
    delete body[p]
    warnings.push({ type: 'param_removed', setting: p, detail: `${p} removed: ${name} does not take it` })
  }
  const tMax = Math.min(adapter.capabilities.temperatureMax, info.temperatureMax ?? Infinity)
  if (typeof body.temperature === 'number' && body.temperature > tMax) {
    warnings.push({ type: 'param_clamped', setting: 'temperature', detail: `temperature ${body.temperature} clamped to ${tMax} for ${name}` })
    body.temperature = tMax
  }
  // The provider's own limit; an OpenAI-compatible server speaks OpenAI's API without it (vLLM takes any number).
  const maxStops = target.kind === 'openai-compatible' ? undefined : adapter.capabilities.maxStopSequences
  if (maxStops !== undefined && Array.isArray(body.stop) && body.stop.length > maxStops) {
    warnings.push({ type: 'param_clamped', setting: 'stop', detail: `stop: the first ${maxStops} of ${body.stop.length} sequences kept, the most ${name} takes` })
    body.stop = body.stop.slice(0, maxStops)
  }
  if (info.samplingExclusive && body.temperature !== undefined && body.top_p !== undefined) {
    delete body.top_p
    warnings.push({ type: 'param_removed', setting: 'top_p', detail: `top_p removed: ${name} does not take temperature and top_p together` })
  }
  if (!info.forcedToolChoice && body.tool_choice !== undefined && body.tool_choice !== 'auto' && body.tool_choice !== 'none') {
    warnings.push({
      type: 'param_relaxed',
      setting: 'tool_choice',
      detail: `tool_choice ${JSON.stringify(body.tool_choice)} relaxed to "auto": ${name} refuses forced tool choice`,
    })
    body.tool_choice = 'auto'
  }
  for (const k of ['max_tokens', 'max_completion_tokens'] as const) {
    const v = body[k]
    if (typeof v === 'number' && v > info.maxOutput) {
      warnings.push({ type: 'param_clamped', setting: k, detail: `${k} ${v} clamped to ${info.maxOutput}, the most ${name} can produce` })
      body[k] = info.maxOutput
    }
  }
  if (adapter.capabilities.requiresMaxTokens && body.max_tokens === undefined && body.max_completion_tokens === undefined)
    body.max_tokens = Math.min(info.defaultMaxTokens, info.maxOutput)
  return { body, warnings }
}
