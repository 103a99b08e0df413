// One Bedrock Converse attempt as an HTTP request: URL, body, and its credentials (SigV4 per attempt, or a Bedrock API key).

import type { UpstreamRequest } from '../adapter'
import type { ChatRequest } from '../openai-types'
import { converseBody, converseUrl } from './converse'
import { type AwsCredentials, signSigV4 } from './sigv4'

/** A Bedrock provider record's credentials: AWS access keys (signed with SigV4), or a Bedrock API key (Bearer). */
export type BedrockAuth = { kind: 'sigv4'; credentials: AwsCredentials } | { kind: 'apiKey'; apiKey: string }

export interface BedrockTarget {
  region: string
  baseUrl: string
  /** The Bedrock model id (`anthropic.claude-3-5-sonnet-20240620-v1:0`). */
  modelId: string
  stream: boolean
  auth: BedrockAuth
}

/** The request of one attempt, signed at `now` (call again for a retry: AWS refuses a stale signature). */
export function bedrockRequest(req: ChatRequest, target: BedrockTarget, now: number): UpstreamRequest {
  const url = converseUrl(target.baseUrl, target.modelId, target.stream)
  const body = JSON.stringify(converseBody(req))
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: target.stream ? 'application/vnd.amazon.eventstream' : 'application/json',
  }
  if (target.auth.kind === 'apiKey') return { url, body, headers: { ...headers, authorization: `Bearer ${target.auth.apiKey}` } }
  const signed = signSigV4({ method: 'POST', url, headers, body }, { region: target.region, service: 'bedrock', credentials: target.auth.credentials, now })
  return { url, body, headers: { ...headers, ...signed } }
}
