// One Bedrock Converse attempt as an HTTP request: URL and body (the adapter's), then its credentials (the kind's transport: SigV4 per attempt, or a Bedrock API key).

import type { UpstreamRequest } from '../adapter'
import type { ChatRequest } from '../openai-types'
import { type BedrockJson, bedrockJson, converseBody, converseUrl } from './converse'
import { type AwsCredentials, signSigV4 } from './sigv4'

/** A Bedrock provider record's credentials: AWS access keys (signed with SigV4), or a Bedrock API key (Bearer). */
export type BedrockAuth = { kind: 'sigv4'; credentials: AwsCredentials } | { kind: 'apiKey'; apiKey: string }

export interface BedrockCall {
  region: string
  baseUrl: string
  stream: boolean
  auth: BedrockAuth
}

/** The unsigned request (`req.model` is the Bedrock model id): what the adapter builds. */
export function converseRequest(req: ChatRequest, baseUrl: string, stream: boolean, promptCaching = false, json: BedrockJson = bedrockJson(req, true)): UpstreamRequest {
  return {
    url: converseUrl(baseUrl, req.model, stream),
    body: JSON.stringify(converseBody(req, promptCaching && /anthropic|claude/i.test(req.model), json)),
    headers: { 'content-type': 'application/json', accept: stream ? 'application/vnd.amazon.eventstream' : 'application/json' },
  }
}

/** A built request with its credentials, signed at `now`: a retry signs again (AWS refuses a stale signature). */
export function withBedrockAuth(r: UpstreamRequest, region: string, auth: BedrockAuth, now: number): UpstreamRequest {
  if (auth.kind === 'apiKey') return { ...r, headers: { ...r.headers, authorization: `Bearer ${auth.apiKey}` } }
  const signed = signSigV4({ method: 'POST', url: r.url, headers: r.headers, body: r.body }, { region, service: 'bedrock', credentials: auth.credentials, now })
  return { ...r, headers: { ...r.headers, ...signed } }
}

/** The request of one attempt, built and signed. */
export function bedrockRequest(req: ChatRequest, call: BedrockCall, now: number): UpstreamRequest {
  return withBedrockAuth(converseRequest(req, call.baseUrl, call.stream), call.region, call.auth, now)
}
