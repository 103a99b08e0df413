// OpenAI chat request → Gemini generateContent body. Gemini answers 400 to any field it does not know,
// so only fields with a Gemini equivalent are written; everything else is left out.
// Reference: https://ai.google.dev/api/generate-content

import type { Target } from '../adapter'
import { jsonRequest } from '../json-output'
import type { ChatRequest, ToolChoice } from '../openai-types'
import { toGeminiContents } from './contents'

function generationConfig(req: ChatRequest): Record<string, unknown> | undefined {
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
  return Object.keys(gc).length ? gc : undefined
}

function functionCallingConfig(choice: ToolChoice | undefined): Record<string, unknown> | undefined {
  if (choice === 'auto') return { mode: 'AUTO' }
  if (choice === 'none') return { mode: 'NONE' }
  if (choice === 'required') return { mode: 'ANY' }
  if (typeof choice === 'object' && choice.type === 'function') return { mode: 'ANY', allowedFunctionNames: [choice.function.name] }
  return undefined
}

export function toGeminiBody(req: ChatRequest, target: Target): Record<string, unknown> {
  const { system, contents } = toGeminiContents(req.messages, target.model.id)
  const body: Record<string, unknown> = { contents }
  if (system) body.systemInstruction = { parts: [{ text: system }] }
  const gc = generationConfig(req)
  if (gc) body.generationConfig = gc
  const declarations = (req.tools ?? [])
    .filter((t) => t.type === 'function')
    .map(({ function: fn }) => ({
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
