// OpenAI chat request → Anthropic Messages API body: parameters, tools and structured output.
// Reference: https://docs.anthropic.com/en/api/messages

import type { Target } from '../adapter'
import { closeObjects, JSON_HINT, JSON_TOOL, JSON_TOOL_HINT, jsonPromptHint, jsonRequest, mapSchema, type Schema } from '../json-output'
import type { ChatRequest, RequestToolChoice } from '../openai-types'
import { cacheControlOf, withUserTurn } from '../content'
import { toAnthropicMessages } from './messages'
import { addCacheBreakpoints } from './prompt-cache'

export { JSON_TOOL }

/**
 * How a JSON answer is obtained from this model (docs/providers.md):
 * `native` output_config.format; `tool` a single tool the answer is the input of; `prompt` an
 * instruction only, for json_object on models that refuse forced tool choice.
 */
export type JsonStrategy = 'none' | 'native' | 'tool' | 'prompt'

export function jsonStrategy(req: ChatRequest, target: Target): JsonStrategy {
  const json = jsonRequest(req)
  if (!json) return 'none'
  const { structuredOutput, forcedToolChoice } = target.model.info
  if (json.mode === 'json_schema' && structuredOutput === 'native') return 'native'
  return forcedToolChoice ? 'tool' : 'prompt'
}

/** Keywords Anthropic's structured outputs refuse; they are kept as a note in the description. */
const UNSUPPORTED = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf', 'minLength', 'maxLength', 'maxItems']

/** A schema output_config.format takes: every object closed, refused constraints moved into descriptions. */
export function nativeSchema(schema: Schema): Schema {
  return mapSchema(closeObjects(schema), (node) => {
    const out: Schema = { ...node }
    const notes: string[] = []
    for (const k of UNSUPPORTED) {
      if (out[k] === undefined) continue
      notes.push(`${k}: ${JSON.stringify(out[k])}`)
      delete out[k]
    }
    if (typeof out.minItems === 'number' && out.minItems > 1) {
      notes.push(`minItems: ${out.minItems}`)
      delete out.minItems
    }
    if (notes.length) out.description = [out.description, `(${notes.join(', ')})`].filter(Boolean).join(' ')
    return out
  })
}

function toolChoice(choice: RequestToolChoice, parallel: boolean | undefined): Record<string, unknown> | undefined {
  let out: Record<string, unknown> | undefined
  if (choice === 'auto' || choice === 'none') out = { type: choice }
  else if (choice === 'required') out = { type: 'any' }
  else if (typeof choice === 'object' && choice.type === 'function' && choice.function) out = { type: 'tool', name: choice.function.name }
  else if (parallel === false) out = { type: 'auto' }
  if (out && parallel === false && out.type !== 'none') out.disable_parallel_tool_use = true
  return out
}

function addTools(body: Record<string, unknown>, req: ChatRequest, strategy: JsonStrategy): void {
  const tools: Record<string, unknown>[] = (req.tools ?? [])
    .flatMap((t) => (t.type === 'function' && t.function ? [t.function] : []))
    .map((fn) => ({
      name: fn.name,
      ...(fn.description ? { description: fn.description } : {}),
      input_schema: { type: 'object', ...fn.parameters },
    }))
  // A chat client's breakpoint on a tool (on the tool or its function) reaches Anthropic as given (PRODUCT §19).
  const functions = (req.tools ?? []).filter((t) => t.type === 'function' && t.function)
  functions.forEach((t, i) => {
    const cache = cacheControlOf(t) ?? cacheControlOf(t.function ?? {})
    if (cache && tools[i]) tools[i].cache_control = cache
  })
  let choice = tools.length ? toolChoice(req.tool_choice, req.parallel_tool_calls) : undefined
  if (strategy === 'tool') {
    const json = jsonRequest(req)
    const schema = json?.mode === 'json_schema' ? json.schema : { type: 'object' }
    // With tools of its own the model must stay free to call them; otherwise the JSON tool is forced.
    if (!tools.length) choice = { type: 'tool', name: JSON_TOOL }
    tools.push({ name: JSON_TOOL, description: 'Gives the final answer as JSON.', input_schema: schema })
  }
  if (tools.length) body.tools = tools
  if (choice) body.tool_choice = choice
}

/** The system-prompt line a strategy needs: the whole instruction for `prompt`, a pointer to the tool otherwise. */
function jsonHint(req: ChatRequest, strategy: JsonStrategy): string {
  const json = jsonRequest(req)
  if (strategy === 'prompt') return json ? jsonPromptHint(json) : JSON_HINT
  return strategy === 'tool' && req.tools?.length ? JSON_TOOL_HINT : ''
}

export function toAnthropicBody(asked: ChatRequest, target: Target): Record<string, unknown> {
  const req = withUserTurn(asked, 'anthropic')
  const { system, messages } = toAnthropicMessages(req.messages)
  const strategy = jsonStrategy(req, target)
  const hint = jsonHint(req, strategy)
  const body: Record<string, unknown> = {
    model: target.model.id,
    max_tokens: req.max_tokens ?? req.max_completion_tokens ?? target.model.info.defaultMaxTokens,
    messages,
  }
  if (typeof system !== 'string') body.system = hint ? [...system, { type: 'text', text: hint }] : system
  else {
    const systemText = [system, hint].filter(Boolean).join('\n\n')
    if (systemText) body.system = systemText
  }
  if (req.temperature !== undefined) body.temperature = req.temperature
  if (req.top_p !== undefined) body.top_p = req.top_p
  if (req.stop !== undefined) body.stop_sequences = typeof req.stop === 'string' ? [req.stop] : req.stop
  addTools(body, req, strategy)
  const json = jsonRequest(req)
  const outputConfig: Record<string, unknown> = {}
  if (strategy === 'native' && json?.mode === 'json_schema') outputConfig.format = { type: 'json_schema', schema: nativeSchema(json.schema) }
  const effort = typeof req.reasoning_effort === 'string' ? EFFORT[req.reasoning_effort] : undefined
  if (effort) outputConfig.effort = effort
  if (Object.keys(outputConfig).length) body.output_config = outputConfig
  if (target.stream) body.stream = true
  if (target.promptCaching) addCacheBreakpoints(body, target.model.id)
  return body
}

/** OpenAI `reasoning_effort` → Anthropic `output_config.effort` (no `minimal` there; `none` sends nothing). */
const EFFORT: Record<string, string> = { minimal: 'low', low: 'low', medium: 'medium', high: 'high', xhigh: 'xhigh', max: 'max' }
