// OpenAI-compatible providers as data (PRODUCT §17): presets, providers set through the admin API with
// quirks, usage counted by gw where the upstream reports none, fallback, discovery, and the key kept secret.

import { afterAll, beforeAll, beforeEach, expect, test } from 'bun:test'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { OLLAMA_MODELS } from '../fakes/ollama'
import { readSse, startTestGateway, type TestGateway } from '../helpers/gateway'
import { assertChatChunk, assertChatCompletion } from '../helpers/openai-schema'

let ollama: FakeUpstream
let compat: FakeUpstream
let openai: FakeUpstream
let gw: TestGateway

const SECRET = 'sk-compat-SECRET-0123456789abcdef'
const hello = [{ role: 'user', content: 'Say hi please' }]

beforeAll(async () => {
  ollama = await startFake('ollama')
  // An OpenAI-compatible vendor that wants a key (the OpenAI fake checks it) and is set through the admin API.
  compat = await startFake('openai', { apiKey: SECRET })
  openai = await startFake('openai')
  gw = await startTestGateway({ openai }, { GW_OLLAMA_BASE_URL: ollama.url })
})
afterAll(async () => {
  await gw.stop()
  await Promise.all([ollama.stop(), compat.stop(), openai.stop()])
})
beforeEach(() => {
  ollama.reset()
  compat.reset()
  openai.reset()
})

const chatRequests = (f: FakeUpstream) => f.requests.filter((r) => r.path.endsWith('/chat/completions'))

test('the ollama preset, set by GW_OLLAMA_BASE_URL alone: the model reaches it unchanged, no key is sent, the answer costs 0', async () => {
  const res = await gw.chat({ model: 'ollama/llama3.2', messages: hello })
  expect(res.status).toBe(200)
  const body = (await res.json()) as Record<string, any>
  assertChatCompletion(body)
  expect(body.model).toBe('ollama/llama3.2')
  const sent = chatRequests(ollama)[0]
  expect(sent?.body).toMatchObject({ model: 'llama3.2', messages: hello })
  expect(sent?.headers.authorization).toBeUndefined()
  expect(res.headers.get('x-gw-cost-usd')).toBe('0')
  const log = await gw.log(res.headers.get('x-gw-request-id') as string)
  expect(log.costUsd).toBe(0)
  expect(log.provider).toBe('ollama')
})
