// The bedrock adapter (PRODUCT §17): OpenAI chat ↔ Bedrock's Converse and ConverseStream, a pure translator (credentials: ./kind.ts).

import type { ProviderAdapter, Target } from '../adapter'
import type { ChatRequest } from '../openai-types'
import { bedrockJson, parseBedrockError, parseConverse } from './converse'
import { ConverseStream, EventStreamEvents } from './converse-stream'
import { converseRequest } from './request'

/** How this request's structured output is asked of the target's model (the JSON tool, or the prompt where a forced tool is refused). */
const jsonOf = (req: ChatRequest, target: Target) => bedrockJson(req, target.model.info.forcedToolChoice)

export const bedrock: ProviderAdapter = {
  id: 'bedrock',
  capabilities: { requiresMaxTokens: false, temperatureMax: 1 },
  buildRequest: (req, target) => converseRequest(req, target.baseUrl, target.stream, !!target.promptCaching, jsonOf(req, target)),
  parseResponse: (json, target, req) => parseConverse(json, jsonOf(req, target) === 'tool'),
  createStream: (target, req) => new ConverseStream(jsonOf(req, target) === 'tool'),
  parseError: parseBedrockError,
  streamFraming: { contentType: 'application/vnd.amazon.eventstream', decoder: () => new EventStreamEvents() },
}
