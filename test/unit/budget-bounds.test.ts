// What bounds a request's reservation (docs/spend.md): input the provider holds itself is found
// wherever an endpoint puts it, names of the client's own (schemas, metadata) are not mistaken for it,
// and `n` multiplies the output.

import { expect, test } from 'bun:test'
import { responseId } from '../../src/apis/responses/answer'
import { loadCatalog } from '../../src/catalog/catalog'
import { choicesOf, heldInputOf, maxCostUsd } from '../../src/policy/budgets'

test('input held by the provider is found in every endpoint body that can name it', () => {
  const cases: [unknown, string][] = [
    [{ model: 'm', input: 'x', previous_response_id: 'resp_abc' }, 'previous_response_id'],
    [{ model: 'm', prompt: { id: 'pmpt_1', variables: { a: 'b' } } }, 'prompt'],
    [{ model: 'm', conversation: { id: 'conv_1' } }, 'conversation'],
    [{ model: 'm', input: [{ type: 'item_reference', id: 'msg_1' }] }, 'type "item_reference"'],
    [{ model: 'm', input: [{ role: 'user', content: [{ type: 'input_file', file_url: 'https://x/y.pdf' }] }] }, 'file_url'],
    [{ model: 'm', tools: [{ type: 'file_search', vector_store_ids: ['vs_1'] }] }, 'type "file_search"'],
    [{ model: 'm', tool_resources: { file_search: { vector_store_ids: ['vs_1'] } } }, 'vector_store_ids'],
    [{ model: 'm', tools: [{ type: 'web_search_preview' }] }, 'type "web_search_preview"'],
    [{ model: 'm', messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: 'file-1' } }] }] }, 'file_id'],
    [{ model: 'm', messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'url', url: 'https://x/y.pdf' } }] }] }, 'source.url'],
    [{ model: 'm', messages: [{ role: 'user', content: 'hi' }], web_search_options: {} }, 'web_search_options'],
    [{ model: 'm', contents: [], cachedContent: 'cachedContents/1' }, 'cachedContent'],
  ]
  for (const [body, field] of cases) expect(heldInputOf(body)).toBe(field)
})

test("a body that carries all its input holds none: gw's own response ids, schemas and metadata naming such fields, empty values", () => {
  const schema = { type: 'object', properties: { file_id: { type: 'string' }, conversation: { type: 'string' } } }
  for (const body of [
    { model: 'm', input: 'x', previous_response_id: responseId(crypto.randomUUID()) },
    { model: 'm', messages: [{ role: 'user', content: 'file_id and previous_response_id, as text' }] },
    { model: 'm', messages: [], tools: [{ type: 'function', function: { name: 'f', parameters: schema } }] },
    { model: 'm', messages: [], response_format: { type: 'json_schema', json_schema: { name: 'x', schema } } },
    { model: 'm', input: 'x', metadata: { file_id: 'mine' }, conversation: null, tools: [] },
    { model: 'm', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x/y.png' } }] }] },
    { model: 'm', messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'https://x/y.png' } }] }] },
  ])
    expect(heldInputOf(body)).toBeUndefined()
})

test('n multiplies the output limit; held input is reserved at the whole context window', () => {
  const model = loadCatalog().resolve('openai', 'gpt-4o').info
  const base = { bytes: 100, images: 0, maxOutputTokens: 5, choices: 1, heldInput: undefined }
  expect(choicesOf({ n: 128 }, undefined)).toBe(128)
  expect(choicesOf({}, { n: 'many' })).toBe(1)
  expect(maxCostUsd(model, base)).toBeCloseTo((100 * 2.5 + 5 * 10) / 1e6, 12)
  expect(maxCostUsd(model, { ...base, choices: 128 })).toBeCloseTo((100 * 2.5 + 128 * 5 * 10) / 1e6, 12)
  expect(maxCostUsd(model, { ...base, heldInput: 'file_id' })).toBeCloseTo((128_000 * 2.5 + 5 * 10) / 1e6, 12)
})
