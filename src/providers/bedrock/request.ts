// One Bedrock Converse attempt as an HTTP request: URL, body, and its credentials (SigV4 per attempt, or a Bedrock API key).

import type { UpstreamRequest } from '../adapter'
import type { ChatRequest } from '../openai-types'
import { converseBody, converseUrl } from './converse'
import { type AwsCredentials, signSigV4 } from './sigv4'

/** A Bedrock provider record's credentials: AWS access keys (signed with SigV4), or a Bedrock API key (Bearer). */
export type BedrockAuth = { kind: 'sigv4'; credentials: AwsCredentials } | { kind: 'apiKey'; apiKey: string }

export interface BedrockCall {
  region: string
  baseUrl: string
  stream: boolean
  auth: BedrockAuth
}

/** The request of one attempt (`req.model` is the Bedrock model id), signed at `now`: a retry signs again (AWS refuses a stale signature). */
export function bedrockRequest(req: ChatRequest, call: BedrockCall, now: number): UpstreamRequest {
  const url = converseUrl(call.baseUrl, req.model, call.stream)
  const body = JSON.stringify(converseBody(req))
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: call.stream ? 'application/vnd.amazon.eventstream' : 'application/json',
  }
  if (call.auth.kind === 'apiKey') return { url, body, headers: { ...headers, authorization: `Bearer ${call.auth.apiKey}` } }
  const signed = signSigV4({ method: 'POST', url, headers, body }, { region: call.region, service: 'bedrock', credentials: call.auth.credentials, now })
  return { url, body, headers: { ...headers, ...signed } }
}
