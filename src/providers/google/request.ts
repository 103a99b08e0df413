// OpenAI chat request → Gemini generateContent body. Gemini answers 400 to any field it does not know,
// so only fields with a Gemini equivalent are written; everything else is left out.
// Reference: https://ai.google.dev/api/generate-content

import type { Target, ThinkingOptions } from '../adapter'
import { jsonRequest } from '../json-output'
import type { ChatRequest, RequestToolChoice } from '../openai-types'
import { withUserTurn } from '../content'
import { toGeminiContents } from './contents'

/** Gemini 2.x models take a thinking budget in tokens (2.5 Pro cannot think less than 128). */
const BUDGET: Record<string, number> = { none: 0, minimal: 512, low: 1024, medium: 8192, high: 24_576, xhigh: 32_768, max: 32_768 }
/** Later models take only a level (MINIMAL is refused by some: the lowest sent is LOW). */
const LEVEL: Record<string, string> = { none: 'LOW', minimal: 'LOW', low: 'LOW', medium: 'MEDIUM', high: 'HIGH', xhigh: 'HIGH', max: 'HIGH' }

/**
 * OpenAI `reasoning_effort` → Gemini `thinkingConfig`, by model generation; an exact budget
 * (`thinking.budgetTokens`) wins on the models that take one, and `showThinking` asks for the thoughts.
 */
function thinkingConfig(effort: unknown, modelId: string, thinking: ThinkingOptions | undefined): Record<string, unknown> | undefined {
  const tc: Record<string, unknown> = {}
  const known = typeof effort === 'string' && effort in BUDGET
  if (!/^gemini-2\./.test(modelId)) {
    if (known) tc.thinkingLevel = LEVEL[effort]
  } else {
    const budget = thinking?.budgetTokens ?? (known ? BUDGET[effort] : undefined)
    if (budget !== undefined) tc.thinkingBudget = /^gemini-2\.5-pro/.test(modelId) ? Math.max(128, budget) : budget
  }
  if (thinking?.showThinking) tc.includeThoughts = true
  return Object.keys(tc).length ? tc : undefined
}

function generationConfig(req: ChatRequest, modelId: string, thinking: ThinkingOptions | undefined): Record<string, unknown> | undefined {
  const gc: Record<string, unknown> = {}
  const max = req.max_tokens ?? req.max_completion_tokens
  if (max !== undefined) gc.maxOutputTokens = max
  if (req.temperature !== undefined) gc.temperature = req.temperature
  if (req.top_p !== undefined) gc.topP = req.top_p
  if (req.stop !== undefined) gc.stopSequences = typeof req.stop === 'string' ? [req.stop] : req.stop
  if (typeof req.seed === 'number') gc.seed = req.seed
  const json = jsonRequest(req)
  if (json) gc.responseMimeType = 'application/json'
  if (json?.mode === 'json_schema') gc.responseJsonSchema = json.schema
  const tc = thinkingConfig(req.reasoning_effort, modelId, thinking)
  if (tc) gc.thinkingConfig = tc
  return Object.keys(gc).length ? gc : undefined
}

function functionCallingConfig(choice: RequestToolChoice): Record<string, unknown> | undefined {
  if (choice === 'auto') return { mode: 'AUTO' }
  if (choice === 'none') return { mode: 'NONE' }
  if (choice === 'required') return { mode: 'ANY' }
  if (typeof choice === 'object' && choice.type === 'function' && choice.function) return { mode: 'ANY', allowedFunctionNames: [choice.function.name] }
  return undefined
}

export function toGeminiBody(asked: ChatRequest, target: Target, thinking?: ThinkingOptions): Record<string, unknown> {
  const req = withUserTurn(asked, 'google')
  const { system, contents } = toGeminiContents(req.messages, target.model.id)
  const body: Record<string, unknown> = { contents }
  if (system) body.systemInstruction = { parts: [{ text: system }] }
  const gc = generationConfig(req, target.model.id, thinking)
  if (gc) body.generationConfig = gc
  const declarations = (req.tools ?? [])
    .flatMap((t) => (t.type === 'function' && t.function ? [t.function] : []))
    .map((fn) => ({
      name: fn.name,
      ...(fn.description ? { description: fn.description } : {}),
      ...(fn.parameters ? { parametersJsonSchema: fn.parameters } : {}),
    }))
  if (declarations.length) {
    body.tools = [{ functionDeclarations: declarations }]
    const fcc = functionCallingConfig(req.tool_choice)
    if (fcc) body.toolConfig = { functionCallingConfig: fcc }
  }
  return body
}
