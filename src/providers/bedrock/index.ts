// The bedrock adapter (PRODUCT §17): OpenAI chat ↔ Bedrock's Converse and ConverseStream, for the org's Bedrock providers.

import { badRequest } from '../../errors'
import type { ProviderAdapter } from '../adapter'
import { parseBedrockError, parseConverse } from './converse'
import { ConverseStream, EventStreamEvents } from './converse-stream'
import { bedrockRequest } from './request'

export const bedrock: ProviderAdapter = {
  // The wire id its targets carry (`openai`, as for every provider named by an org); never looked up by it.
  id: 'openai',
  capabilities: { requiresMaxTokens: false, temperatureMax: 1 },
  buildRequest(req, target) {
    if (!target.bedrock) throw badRequest('not a Bedrock provider')
    return bedrockRequest(req, { region: target.bedrock.region, baseUrl: target.baseUrl, stream: target.stream, auth: target.bedrock.auth }, Date.now())
  },
  parseResponse: (json) => parseConverse(json),
  createStream: () => new ConverseStream(),
  parseError: parseBedrockError,
  streamFraming: { contentType: 'application/vnd.amazon.eventstream', decoder: () => new EventStreamEvents() },
}
