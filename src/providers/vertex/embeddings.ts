// Embeddings on Vertex AI (PRODUCT §17): the `:predict` call of Google's text embedding models (`text-embedding-005`,
// `gemini-embedding-001`, …) as Vertex AI's text embeddings reference gives it. Pure: no fetch.

import { badRequest } from '../../errors'
import type { UpstreamRequest } from '../adapter'
import { isRecord } from '../upstream-errors'
import type { VertexTarget } from './vertex'

/** Most texts one `:predict` call takes (Vertex's limit for the text-embedding models). */
export const VERTEX_MAX_TEXTS = 250

/** The path of a model of the `google` publisher on Vertex AI, with the call (`:predict`, `:generateContent`). */
export const vertexModelPath = (v: Pick<VertexTarget, 'project' | 'location'>, publisher: 'google' | 'anthropic', model: string, call: string): string =>
  `/v1/projects/${encodeURIComponent(v.project)}/locations/${encodeURIComponent(v.location)}/publishers/${publisher}/models/${encodeURIComponent(model)}:${call}`

/** `POST …/publishers/google/models/{model}:predict` with `{instances: [{content}], parameters}`; the token is the transport's. */
export function predictRequest(baseUrl: string, v: VertexTarget, texts: string[], dimensions: number | undefined): UpstreamRequest {
  // gemini-embedding-001 takes one text per call on Vertex AI.
  if (v.model.startsWith('gemini-embedding') && texts.length !== 1) throw badRequest(`${v.model} on Vertex AI embeds one text per call: send one input (got ${texts.length}), or use text-embedding-005`)
  if (texts.length > VERTEX_MAX_TEXTS) throw badRequest(`Vertex AI embeds at most ${VERTEX_MAX_TEXTS} inputs per call (got ${texts.length})`)
  const body = { instances: texts.map((content) => ({ content })), ...(dimensions !== undefined ? { parameters: { outputDimensionality: dimensions } } : {}) }
  return { url: `${baseUrl}${vertexModelPath(v, 'google', v.model, 'predict')}`, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }
}

/** `{predictions: [{embeddings: {values, statistics: {token_count}}}]}`: the vectors and the tokens counted. Throws on another shape. */
export function readPredictions(json: unknown): { vectors: number[][]; promptTokens: number | undefined } {
  if (!isRecord(json) || !Array.isArray(json.predictions)) throw new Error('answer has no predictions')
  let tokens = 0
  let counted = true
  const vectors = json.predictions.map((p) => {
    const e = isRecord(p) && isRecord(p.embeddings) ? p.embeddings : undefined
    if (!e || !Array.isArray(e.values)) throw new Error('a prediction has no embeddings.values')
    const count = isRecord(e.statistics) ? e.statistics.token_count : undefined
    if (typeof count === 'number') tokens += count
    else counted = false
    return e.values as number[]
  })
  return { vectors, promptTokens: counted ? Math.round(tokens) : undefined }
}
