// Embeddings adapters (OpenAI, Mistral, Google batchEmbedContents, Bedrock InvokeModel): each builds its provider's
// request from the OpenAI-shaped one and answers in OpenAI's shape (`encoding_format: "base64"` as
// little-endian float32, as OpenAI encodes it). Anthropic has no embeddings.
// References: https://platform.openai.com/docs/api-reference/embeddings,
// https://docs.mistral.ai/api/#tag/embeddings, https://ai.google.dev/api/embeddings

import { badRequest } from '../../errors'
import { bedrock } from '../../providers/bedrock'
import { embeddingFamily, embeddingsBody, invokeUrl, readEmbeddings } from '../../providers/bedrock/embeddings'
import { google } from '../../providers/google'
import { predictRequest, readPredictions } from '../../providers/vertex/embeddings'
import { mistral } from '../../providers/mistral'
import { openai } from '../../providers/openai'
import { openAIEndpoint, openAIHeaders } from '../../providers/openai-compatible'
import type { AnswerShape } from '../../pipeline/6-normalise'
import type { AdapterLookup } from '../../pipeline/5-fallback'
import type { ProviderAdapter, Target, UpstreamCompletion, UpstreamRequest } from '../../providers/adapter'
import type { Usage } from '../../providers/openai-types'
import type { Wire } from '../../providers/provider-id'
import { isRecord } from '../../providers/upstream-errors'
import type { EmbeddingsRequest } from './request'

/** An embeddings answer is no chat answer: no choices, the OpenAI-shaped body relayed. */
function answer(body: Record<string, unknown>, usage: Usage | undefined): UpstreamCompletion {
  const out: UpstreamCompletion = { choices: [], native: body }
  if (usage) out.usage = usage
  return out
}

const usageOf = (prompt: number): Usage => ({ prompt_tokens: prompt, completion_tokens: 0, total_tokens: prompt })

/** Float vector → base64 of its little-endian float32 bytes (what OpenAI sends for encoding_format base64). */
function toBase64(values: number[]): string {
  return Buffer.from(new Float32Array(values).buffer).toString('base64')
}

/** The OpenAI list body from plain vectors (its usage is added by the answer's shape). */
function openAIList(vectors: number[][], model: string, base64: boolean): Record<string, unknown> {
  return {
    object: 'list',
    data: vectors.map((v, index) => ({ object: 'embedding', index, embedding: base64 ? toBase64(v) : v })),
    model,
  }
}

function texts(req: EmbeddingsRequest, provider: string): string[] {
  if (req.input.some((x) => typeof x !== 'string')) throw badRequest(`Token arrays as "input" are taken by OpenAI only, not ${provider}`)
  return req.input as string[]
}

const json = (url: string, headers: Record<string, string>, body: unknown): UpstreamRequest => ({
  url,
  headers: { ...headers, 'content-type': 'application/json' },
  body: JSON.stringify(body),
})

function readUsage(u: unknown): Usage | undefined {
  if (!isRecord(u) || typeof u.prompt_tokens !== 'number') return undefined
  return usageOf(u.prompt_tokens)
}

function vectorsOf(data: unknown): number[][] {
  if (!Array.isArray(data)) throw new Error('answer has no data array')
  return data.map((d) => {
    if (!isRecord(d) || !Array.isArray(d.embedding)) throw new Error('an entry has no embedding')
    return d.embedding as number[]
  })
}

/** OpenAI: the client's body as sent, model swapped; the answer relayed. */
function openAIEmbeddings(req: EmbeddingsRequest): ProviderAdapter {
  return {
    ...openai,
    buildRequest: (_chat, target) => {
      const { url, model } = openAIEndpoint(target, 'embeddings')
      const { model: _, ...rest } = req.native
      return json(url, openAIHeaders(target), model === undefined ? rest : { ...rest, model })
    },
    parseResponse: (body) => {
      if (!isRecord(body) || !Array.isArray(body.data)) throw new Error('answer has no data array')
      return answer(body, readUsage(body.usage))
    },
  }
}

/** Mistral: only the fields its schema has (it answers 422 to others); `dimensions` → `output_dimension`. */
function mistralEmbeddings(req: EmbeddingsRequest): ProviderAdapter {
  return {
    ...mistral,
    buildRequest: (_chat, target) => {
      const body: Record<string, unknown> = { model: target.model.id, input: texts(req, 'mistral') }
      if (req.dimensions !== undefined) body.output_dimension = req.dimensions
      return json(`${target.baseUrl}/embeddings`, { authorization: `Bearer ${target.apiKey}` }, body)
    },
    parseResponse: (body, target) => {
      if (!isRecord(body)) throw new Error('answer is not an object')
      const vectors = vectorsOf(body.data)
      const usage = readUsage(body.usage)
      return answer(openAIList(vectors, String(body.model ?? target.model.id), req.base64), usage)
    },
  }
}

/** Google: one batchEmbedContents call for all inputs; `dimensions` → `outputDimensionality`. */
function googleEmbeddings(req: EmbeddingsRequest): ProviderAdapter {
  return {
    ...google,
    buildRequest: (_chat, target: Target) => {
      const model = `models/${target.model.id}`
      const requests = texts(req, 'google').map((text) => ({
        model,
        content: { parts: [{ text }] },
        ...(req.dimensions !== undefined ? { outputDimensionality: req.dimensions } : {}),
      }))
      return json(`${target.baseUrl}/${model}:batchEmbedContents`, { 'x-goog-api-key': target.apiKey }, { requests })
    },
    parseResponse: (body, target) => {
      if (!isRecord(body) || !Array.isArray(body.embeddings)) throw new Error('answer has no embeddings array')
      const vectors = body.embeddings.map((e) => {
        if (!isRecord(e) || !Array.isArray(e.values)) throw new Error('an embedding has no values')
        return e.values as number[]
      })
      const meta = isRecord(body.usageMetadata) ? body.usageMetadata : undefined
      const usage = typeof meta?.promptTokenCount === 'number' ? usageOf(meta.promptTokenCount) : undefined
      return answer(openAIList(vectors, target.model.id, req.base64), usage)
    },
  }
}

/**
 * Bedrock: InvokeModel with Titan's or Cohere's body (SigV4 signed by the bedrock kind like a Converse call);
 * Cohere reports no tokens, so its usage is gw's estimate.
 */
function bedrockEmbeddings(req: EmbeddingsRequest): ProviderAdapter {
  const familyOf = (target: Target) => {
    const family = embeddingFamily(target.model.id)
    if (!family) throw badRequest(`${target.model.name.slice(0, 64)} is not a Bedrock embeddings model (amazon.titan-embed-text-*, cohere.embed-*)`)
    return family
  }
  return {
    ...bedrock,
    buildRequest: (_chat, target) =>
      json(invokeUrl(target.baseUrl, target.model.id), { accept: 'application/json' }, embeddingsBody(familyOf(target), target.model.id, texts(req, 'bedrock'), req.dimensions)),
    parseResponse: (body, target) => {
      const { vectors, promptTokens } = readEmbeddings(familyOf(target), body)
      return answer(openAIList(vectors, target.model.id, req.base64), promptTokens === undefined ? undefined : usageOf(promptTokens))
    },
  }
}

/** Google's models on Vertex AI: one `:predict` call (the vertex kind adds the token); Vertex counts the tokens. */
function vertexEmbeddings(req: EmbeddingsRequest): ProviderAdapter {
  return {
    ...google,
    buildRequest: (_chat, target) => {
      if (!target.vertex) throw badRequest('not a Vertex AI provider')
      return predictRequest(target.baseUrl, target.vertex, texts(req, 'vertex'), req.dimensions)
    },
    parseResponse: (body, target) => {
      const { vectors, promptTokens } = readPredictions(body)
      return answer(openAIList(vectors, target.model.id, req.base64), promptTokens === undefined ? undefined : usageOf(promptTokens))
    },
  }
}

/** The embeddings adapter of each provider that has embeddings. */
export function embeddingsAdapters(req: EmbeddingsRequest): AdapterLookup {
  const made: Partial<Record<Wire, ProviderAdapter>> = {
    openai: openAIEmbeddings(req),
    mistral: mistralEmbeddings(req),
    google: googleEmbeddings(req),
    bedrock: bedrockEmbeddings(req),
  }
  const vertex = vertexEmbeddings(req)
  // Google's models on Vertex AI have an embeddings API of their own (`:predict`), not the Gemini API's.
  return (p, target) => (p === 'google' && target?.vertex ? vertex : made[p])
}

/**
 * OpenAI's embeddings answer. The body is the provider's (OpenAI) or built from its vectors; usage the
 * provider did not report is gw's estimate (the log entry says so).
 */
export const EMBEDDINGS_SHAPE: AnswerShape = {
  json: (c, usage) => {
    const body = isRecord(c.native) ? c.native : {}
    return isRecord(body.usage) ? body : { ...body, usage: { prompt_tokens: usage.prompt_tokens, total_tokens: usage.prompt_tokens } }
  },
  stream: () => {
    throw new Error('embeddings are never streamed')
  },
}
