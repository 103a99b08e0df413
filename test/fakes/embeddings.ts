// Fake embeddings endpoints: OpenAI and Mistral POST /v1/embeddings, Gemini :batchEmbedContents.
// Vectors are deterministic per text (so tests can recompute them); usage is one token per word.

import { countWords, isObj, jsonReply, randomHex } from './common.ts'
import { googleError } from './google.ts'
import { mistralError } from './mistral.ts'
import { openaiError } from './openai.ts'
import type { NativeReply } from './types.ts'

/** Default vector length (the real models give 256 to 3072). */
export const FAKE_DIMENSIONS = 8
/** The most numbers a fake vector may have, as the real models refuse more than they give. */
const MAX_DIMENSIONS = 3072

/** A requested vector length the real APIs refuse (not a whole number from 1 to 3072), else undefined. */
const badDimensions = (v: unknown) => v !== undefined && !(Number.isInteger(v) && (v as number) >= 1 && (v as number) <= MAX_DIMENSIONS)

/** The fake's vector for a text: the same text always gives the same numbers. */
export function fakeVector(text: string, dimensions = FAKE_DIMENSIONS): number[] {
  let h = 2166136261
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619) >>> 0
  const out: number[] = []
  for (let i = 0; i < dimensions; i++) {
    h = Math.imul(h ^ (h >>> 15), 2246822507) >>> 0
    out.push(Math.fround((h % 2000) / 1000 - 1))
  }
  return out
}

const base64 = (v: number[]) => Buffer.from(new Float32Array(v).buffer).toString('base64')

const texts = (input: unknown): string[] | undefined =>
  typeof input === 'string' ? [input] : Array.isArray(input) && input.length && input.every((x) => typeof x === 'string') ? input : undefined

/** POST /v1/embeddings (OpenAI): strings or token arrays, `dimensions`, `encoding_format`. */
export function openaiEmbeddings(body: unknown): NativeReply {
  if (!isObj(body)) return openaiError(400, 'We could not parse the JSON body of your request.', 'invalid_request_error')
  if (typeof body.model !== 'string') return openaiError(400, "you must provide a model parameter", 'invalid_request_error')
  const tokenArrays = Array.isArray(body.input) && body.input.every((x) => Array.isArray(x) || typeof x === 'number')
  const list = tokenArrays ? (typeof (body.input as unknown[])[0] === 'number' ? [body.input] : (body.input as unknown[])).map((t) => (t as number[]).join(' ')) : texts(body.input)
  if (!list) return openaiError(400, "'input' : input must be a string or an array of strings", 'invalid_request_error', 'input')
  if (body.encoding_format !== undefined && body.encoding_format !== 'float' && body.encoding_format !== 'base64')
    return openaiError(400, `'${body.encoding_format}' is not one of ['float', 'base64'] - 'encoding_format'`, 'invalid_request_error', 'encoding_format')
  if (badDimensions(body.dimensions)) return openaiError(400, 'This model does not support specifying dimensions.', 'invalid_request_error', 'dimensions')
  const dims = typeof body.dimensions === 'number' ? body.dimensions : FAKE_DIMENSIONS
  const tokens = list.reduce((n, t) => n + countWords(t), 0)
  return jsonReply(200, {
    object: 'list',
    data: list.map((t, index) => ({ object: 'embedding', index, embedding: body.encoding_format === 'base64' ? base64(fakeVector(t, dims)) : fakeVector(t, dims) })),
    model: body.model,
    usage: { prompt_tokens: tokens, total_tokens: tokens },
  })
}

const MISTRAL_FIELDS = new Set(['model', 'input', 'output_dimension', 'output_dtype', 'encoding_format', 'metadata'])

/** POST /v1/embeddings (Mistral): its schema forbids extra fields (422). */
export function mistralEmbeddings(body: unknown): NativeReply {
  if (!isObj(body)) return mistralError(400, 'Invalid JSON', 'invalid_request_error')
  const extra = Object.keys(body).filter((k) => !MISTRAL_FIELDS.has(k))
  if (extra.length)
    return mistralError(
      422,
      { detail: extra.map((k) => ({ type: 'extra_forbidden', loc: ['body', k], msg: 'Extra inputs are not permitted', input: body[k] })) },
      'invalid_request_error',
    )
  const list = texts(body.input)
  if (typeof body.model !== 'string' || !list)
    return mistralError(422, { detail: [{ type: 'missing', loc: ['body', 'input'], msg: 'Field required', input: body }] }, 'invalid_request_error')
  if (badDimensions(body.output_dimension))
    return mistralError(422, { detail: [{ type: 'less_than_equal', loc: ['body', 'output_dimension'], msg: `Input should be less than or equal to ${MAX_DIMENSIONS}`, input: body.output_dimension }] }, 'invalid_request_error')
  const dims = typeof body.output_dimension === 'number' ? body.output_dimension : FAKE_DIMENSIONS
  const tokens = list.reduce((n, t) => n + countWords(t), 0)
  return jsonReply(200, {
    id: randomHex(32),
    object: 'list',
    data: list.map((t, index) => ({ object: 'embedding', embedding: fakeVector(t, dims), index })),
    model: body.model,
    usage: { prompt_audio_seconds: null, prompt_tokens: tokens, total_tokens: tokens, completion_tokens: 0, request_count: null },
  })
}

const GOOGLE_REQUEST = new Set(['model', 'content', 'taskType', 'title', 'outputDimensionality'])

/** POST /v1beta/models/{model}:batchEmbedContents: one request per text, no usage (as recorded). */
export function googleEmbeddings(model: string, body: unknown): NativeReply {
  if (!isObj(body) || !Array.isArray(body.requests) || body.requests.length === 0)
    return googleError(400, '* BatchEmbedContentsRequest.requests: requests is required.\n')
  const out: { values: number[] }[] = []
  for (const [i, r] of body.requests.entries()) {
    if (!isObj(r)) return googleError(400, `Invalid value at 'requests[${i}]'`)
    for (const k of Object.keys(r))
      if (!GOOGLE_REQUEST.has(k)) return googleError(400, `Invalid JSON payload received. Unknown name "${k}" at 'requests[${i}]': Cannot find field.`)
    if (r.model !== `models/${model}`)
      return googleError(400, `Model "${String(r.model)}" in requests[${i}] does not match the request's model "models/${model}".`)
    const parts = isObj(r.content) && Array.isArray(r.content.parts) ? r.content.parts : []
    const text = parts.map((p) => (isObj(p) && typeof p.text === 'string' ? p.text : '')).join('')
    if (badDimensions(r.outputDimensionality)) return googleError(400, `* BatchEmbedContentsRequest.requests[${i}].output_dimensionality: must be between 1 and ${MAX_DIMENSIONS}\n`)
    const dims = typeof r.outputDimensionality === 'number' ? r.outputDimensionality : FAKE_DIMENSIONS
    out.push({ values: fakeVector(text, dims) })
  }
  return jsonReply(200, { embeddings: out }, { 'content-type': 'application/json; charset=UTF-8' })
}
