// The bedrock adapter (PRODUCT §17): OpenAI chat ↔ Bedrock's Converse and ConverseStream, a pure translator (credentials: ./kind.ts).

import type { ProviderAdapter } from '../adapter'
import { parseBedrockError, parseConverse } from './converse'
import { ConverseStream, EventStreamEvents } from './converse-stream'
import { converseRequest } from './request'

export const bedrock: ProviderAdapter = {
  id: 'bedrock',
  capabilities: { requiresMaxTokens: false, temperatureMax: 1 },
  buildRequest: (req, target) => converseRequest(req, target.baseUrl, target.stream),
  parseResponse: (json) => parseConverse(json),
  createStream: () => new ConverseStream(),
  parseError: parseBedrockError,
  streamFraming: { contentType: 'application/vnd.amazon.eventstream', decoder: () => new EventStreamEvents() },
}
