// Bedrock embeddings through InvokeModel (PRODUCT §17, docs/providers.md "AWS Bedrock"): the request bodies and answers
// of Amazon Titan Text Embeddings and Cohere Embed as Bedrock's model parameters reference gives them. Pure: no fetch.

import { badRequest } from '../../errors'
import { isRecord } from '../upstream-errors'
import { foundationModel } from './settings'

/** Which body a model takes: Titan's one `inputText`, or Cohere's list of `texts`. */
export type EmbeddingFamily = 'titan' | 'cohere'

export function embeddingFamily(modelId: string): EmbeddingFamily | undefined {
  const id = foundationModel(modelId)
  if (id.startsWith('amazon.titan-embed-text') || id.startsWith('amazon.titan-embed-g1-text')) return 'titan'
  if (id.startsWith('cohere.embed-')) return 'cohere'
  return undefined
}

/** `POST {baseUrl}/model/{modelId}/invoke`: the model id one path segment (`:` sent as `%3A`). */
export const invokeUrl = (baseUrl: string, modelId: string): string => `${baseUrl.replace(/\/+$/, '')}/model/${encodeURIComponent(modelId)}/invoke`

/** Titan Text Embeddings V2's sizes; V1 has one (1536) and takes no `dimensions`. */
const TITAN_V2_DIMENSIONS = [256, 512, 1024]
/** Cohere Embed v4's sizes (`output_dimension`); v3 models have one (1024). */
const COHERE_V4_DIMENSIONS = [256, 512, 1024, 1536]
/** Most texts one Cohere call takes. */
export const COHERE_MAX_TEXTS = 96

/**
 * The InvokeModel body for `texts`. Titan embeds one text per call: more than one input is a 400 (send them
 * one by one, or use a Cohere model). Cohere gets `input_type: "search_document"` (OpenAI's API has no such field).
 */
export function embeddingsBody(family: EmbeddingFamily, modelId: string, texts: string[], dimensions: number | undefined): Record<string, unknown> {
  const id = foundationModel(modelId)
  if (family === 'titan') {
    if (texts.length !== 1) throw badRequest(`${id} embeds one text per call: send one input (got ${texts.length}), or use a cohere.embed-* model`)
    if (dimensions === undefined) return { inputText: texts[0] }
    if (!id.startsWith('amazon.titan-embed-text-v2')) throw badRequest(`${id} has one size: leave out "dimensions"`)
    if (!TITAN_V2_DIMENSIONS.includes(dimensions)) throw badRequest(`"dimensions" for ${id} must be one of ${TITAN_V2_DIMENSIONS.join(', ')}`)
    return { inputText: texts[0], dimensions }
  }
  if (texts.length > COHERE_MAX_TEXTS) throw badRequest(`${id} takes at most ${COHERE_MAX_TEXTS} inputs per call (got ${texts.length})`)
  const body: Record<string, unknown> = { texts, input_type: 'search_document' }
  if (dimensions === undefined) return body
  if (!id.startsWith('cohere.embed-v4') || !COHERE_V4_DIMENSIONS.includes(dimensions))
    throw badRequest(`"dimensions" for ${id} must be left out${id.startsWith('cohere.embed-v4') ? ` or be one of ${COHERE_V4_DIMENSIONS.join(', ')}` : ' (it has one size)'}`)
  return { ...body, output_dimension: dimensions }
}

const isVector = (v: unknown): v is number[] => Array.isArray(v) && v.every((x) => typeof x === 'number')

/** The vectors of an answer, and the tokens it says it read (Titan's `inputTextTokenCount`; Cohere says none). Throws on another shape. */
export function readEmbeddings(family: EmbeddingFamily, json: unknown): { vectors: number[][]; promptTokens: number | undefined } {
  if (!isRecord(json)) throw new Error('answer is not an object')
  if (family === 'titan') {
    if (!isVector(json.embedding)) throw new Error('answer has no embedding')
    return { vectors: [json.embedding], promptTokens: typeof json.inputTextTokenCount === 'number' ? json.inputTextTokenCount : undefined }
  }
  // `embeddings` is the list of float vectors, or (when embedding_types was asked for) an object of them by type.
  const list = isRecord(json.embeddings) ? json.embeddings.float : json.embeddings
  if (!Array.isArray(list) || !list.every(isVector)) throw new Error('answer has no embeddings list')
  return { vectors: list, promptTokens: undefined }
}
