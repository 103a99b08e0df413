// The bedrock adapter (PRODUCT §17): OpenAI chat ↔ Bedrock's Converse and ConverseStream, a pure translator (credentials: ./kind.ts).

import type { ProviderAdapter } from '../adapter'
import { jsonRequest } from '../json-output'
import { parseBedrockError, parseConverse } from './converse'
import { ConverseStream, EventStreamEvents } from './converse-stream'
import { converseRequest } from './request'

export const bedrock: ProviderAdapter = {
  id: 'bedrock',
  capabilities: { requiresMaxTokens: false, temperatureMax: 1 },
  buildRequest: (req, target) => converseRequest(req, target.baseUrl, target.stream, !!target.promptCaching),
  parseResponse: (json, _target, req) => parseConverse(json, jsonRequest(req) !== undefined),
  createStream: (_target, req) => new ConverseStream(jsonRequest(req) !== undefined),
  parseError: parseBedrockError,
  streamFraming: { contentType: 'application/vnd.amazon.eventstream', decoder: () => new EventStreamEvents() },
}
