// The conformance suite's inputs, and per provider what must reach its upstream for each of them:
// whole bodies, so a field too many or too few fails.

import { expect } from 'bun:test'
import type { FakeProvider, FakeUpstream } from '../fakes/upstream'

export const HELLO = [{ role: 'user', content: 'Say hi please' }]

export const SYSTEM_CHAT = [
  { role: 'system', content: 'Be brief' },
  { role: 'developer', content: 'Answer in English' },
  { role: 'user', content: 'Say hi please' },
]

/** Ends with two user messages in a row, which Anthropic and Gemini need merged. */
export const MULTI_TURN = [
  { role: 'user', content: 'Hi there' },
  { role: 'assistant', content: 'Hello! How can I help?' },
  { role: 'user', content: 'Tell me a joke' },
  { role: 'user', content: 'a short one' },
]

export const WEATHER_PARAMS = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }
export const TOOLS = [
  { type: 'function', function: { name: 'get_weather', description: 'Current weather in a city', parameters: WEATHER_PARAMS } },
]

export interface Call {
  id: string
  type: 'function'
  function: { name: string; arguments: string }
}

export const toolResultChat = (call: Call) => [
  { role: 'user', content: 'Weather in Paris?' },
  { role: 'assistant', content: null, tool_calls: [call] },
  { role: 'tool', tool_call_id: call.id, content: '{"temp_c":14}' },
]

export const OUTPUT_SCHEMA = {
  mode: 'json_schema',
  type: 'object',
  properties: { city: { type: 'string' }, temp_c: { type: 'number' } },
  required: ['city', 'temp_c'],
}
const SCHEMA = { type: 'object', properties: OUTPUT_SCHEMA.properties, required: OUTPUT_SCHEMA.required }
const CLOSED_SCHEMA = { ...SCHEMA, additionalProperties: false }

const JSON_HINT = { role: 'system', content: expect.stringContaining('JSON') }

/** Gemini carries its thought signature back in the part; gw keeps it in the tool-call id (base64url). */
export function signatureIn(id: string): string {
  const b64url = id.split('_ts_')[1] ?? ''
  return Buffer.from(b64url, 'base64url').toString('base64')
}

export interface ProviderSpec {
  provider: FakeProvider
  /** The model id at the provider (the gateway model is `provider/id`). */
  id: string
  path(stream: boolean): string
  /** The credential header the upstream got. */
  auth(fake: FakeUpstream): Record<string, string>
  /** Native stream events after which content has started but the answer is not complete. */
  eventsIntoContent: number
  /** How the fake's "refusal" reaches the client, and whether the log sees a refusal. */
  refusal: { finish: string; logged: boolean }
  errorStatuses: number[]
  sent: {
    text(): unknown
    stream(): unknown
    system(): unknown
    multiTurn(): unknown
    tools(): unknown
    toolResult(call: Call): unknown
    parallelOff(): unknown
    jsonObject(): unknown
    jsonSchema(): unknown
    length(): unknown
  }
}

const ANTHROPIC_TOOLS = [{ name: 'get_weather', description: 'Current weather in a city', input_schema: WEATHER_PARAMS }]
const GEMINI_TOOLS = [
  { functionDeclarations: [{ name: 'get_weather', description: 'Current weather in a city', parametersJsonSchema: WEATHER_PARAMS }] },
]
const geminiText = (text: string) => ({ role: 'user', parts: [{ text }] })

const openai: ProviderSpec = {
  provider: 'openai',
  id: 'gpt-4o',
  path: () => '/v1/chat/completions',
  auth: (fake) => ({ authorization: `Bearer ${fake.apiKey}` }),
  eventsIntoContent: 3,
  refusal: { finish: 'stop', logged: true },
  errorStatuses: [400, 401, 429, 500],
  sent: {
    text: () => ({ model: 'gpt-4o', messages: HELLO }),
    stream: () => ({ model: 'gpt-4o', messages: HELLO, stream: true, stream_options: { include_usage: true } }),
    system: () => ({ model: 'gpt-4o', messages: SYSTEM_CHAT }),
    multiTurn: () => ({ model: 'gpt-4o', messages: MULTI_TURN }),
    tools: () => ({ model: 'gpt-4o', messages: HELLO, tools: TOOLS, tool_choice: 'required' }),
    toolResult: (call) => ({ model: 'gpt-4o', messages: toolResultChat(call), tools: TOOLS }),
    parallelOff: () => ({ model: 'gpt-4o', messages: HELLO, tools: TOOLS, tool_choice: 'auto', parallel_tool_calls: false }),
    jsonObject: () => ({ model: 'gpt-4o', messages: [JSON_HINT, ...HELLO], response_format: { type: 'json_object' } }),
    jsonSchema: () => ({
      model: 'gpt-4o',
      messages: HELLO,
      response_format: { type: 'json_schema', json_schema: { name: 'output', schema: CLOSED_SCHEMA, strict: true } },
    }),
    length: () => ({ model: 'gpt-4o', messages: HELLO, max_tokens: 2 }),
  },
}

const A = { model: 'claude-haiku-4-5', max_tokens: 8192 }
const anthropic: ProviderSpec = {
  provider: 'anthropic',
  id: 'claude-haiku-4-5',
  path: () => '/v1/messages',
  auth: (fake) => ({ 'x-api-key': fake.apiKey, 'anthropic-version': '2023-06-01' }),
  eventsIntoContent: 5,
  refusal: { finish: 'content_filter', logged: true },
  errorStatuses: [400, 401, 429, 500, 529],
  sent: {
    text: () => ({ ...A, messages: HELLO }),
    stream: () => ({ ...A, messages: HELLO, stream: true }),
    system: () => ({ ...A, system: 'Be brief\n\nAnswer in English', messages: HELLO }),
    multiTurn: () => ({
      ...A,
      messages: [
        { role: 'user', content: 'Hi there' },
        { role: 'assistant', content: 'Hello! How can I help?' },
        { role: 'user', content: [{ type: 'text', text: 'Tell me a joke' }, { type: 'text', text: 'a short one' }] },
      ],
    }),
    tools: () => ({ ...A, messages: HELLO, tools: ANTHROPIC_TOOLS, tool_choice: { type: 'any' } }),
    toolResult: (call) => ({
      ...A,
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: [{ type: 'tool_use', id: call.id, name: 'get_weather', input: { city: 'x' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '{"temp_c":14}' }] },
      ],
      tools: ANTHROPIC_TOOLS,
    }),
    parallelOff: () => ({ ...A, messages: HELLO, tools: ANTHROPIC_TOOLS, tool_choice: { type: 'auto', disable_parallel_tool_use: true } }),
    jsonObject: () => ({
      ...A,
      messages: HELLO,
      tools: [{ name: 'json_response', description: expect.any(String), input_schema: { type: 'object' } }],
      tool_choice: { type: 'tool', name: 'json_response' },
    }),
    jsonSchema: () => ({ ...A, messages: HELLO, output_config: { format: { type: 'json_schema', schema: CLOSED_SCHEMA } } }),
    length: () => ({ ...A, max_tokens: 2, messages: HELLO }),
  },
}

const google: ProviderSpec = {
  provider: 'google',
  id: 'gemini-3-pro-preview',
  path: (stream) => `/v1beta/models/gemini-3-pro-preview:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`,
  auth: (fake) => ({ 'x-goog-api-key': fake.apiKey }),
  eventsIntoContent: 2,
  refusal: { finish: 'content_filter', logged: true },
  errorStatuses: [400, 401, 429, 500],
  sent: {
    text: () => ({ contents: [geminiText('Say hi please')] }),
    stream: () => ({ contents: [geminiText('Say hi please')] }),
    system: () => ({ systemInstruction: { parts: [{ text: 'Be brief\n\nAnswer in English' }] }, contents: [geminiText('Say hi please')] }),
    multiTurn: () => ({
      contents: [
        geminiText('Hi there'),
        { role: 'model', parts: [{ text: 'Hello! How can I help?' }] },
        { role: 'user', parts: [{ text: 'Tell me a joke' }, { text: 'a short one' }] },
      ],
    }),
    tools: () => ({ contents: [geminiText('Say hi please')], tools: GEMINI_TOOLS, toolConfig: { functionCallingConfig: { mode: 'ANY' } } }),
    toolResult: (call) => ({
      contents: [
        geminiText('Weather in Paris?'),
        { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'x' } }, thoughtSignature: signatureIn(call.id) }] },
        { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { temp_c: 14 } } }] },
      ],
      tools: GEMINI_TOOLS,
    }),
    parallelOff: () => ({ contents: [geminiText('Say hi please')], tools: GEMINI_TOOLS, toolConfig: { functionCallingConfig: { mode: 'AUTO' } } }),
    jsonObject: () => ({ contents: [geminiText('Say hi please')], generationConfig: { responseMimeType: 'application/json' } }),
    jsonSchema: () => ({
      contents: [geminiText('Say hi please')],
      generationConfig: { responseMimeType: 'application/json', responseJsonSchema: SCHEMA },
    }),
    length: () => ({ contents: [geminiText('Say hi please')], generationConfig: { maxOutputTokens: 2 } }),
  },
}

const M = { model: 'mistral-small-latest' }
const mistral: ProviderSpec = {
  provider: 'mistral',
  id: 'mistral-small-latest',
  path: () => '/v1/chat/completions',
  auth: (fake) => ({ authorization: `Bearer ${fake.apiKey}` }),
  eventsIntoContent: 3,
  // Mistral has no refusal signal: its refusals are ordinary answers.
  refusal: { finish: 'stop', logged: false },
  errorStatuses: [400, 401, 429, 500],
  sent: {
    text: () => ({ ...M, messages: HELLO }),
    stream: () => ({ ...M, messages: HELLO, stream: true }),
    system: () => ({
      ...M,
      messages: [
        { role: 'system', content: 'Be brief' },
        { role: 'system', content: 'Answer in English' },
        { role: 'user', content: 'Say hi please' },
      ],
    }),
    multiTurn: () => ({ ...M, messages: MULTI_TURN }),
    tools: () => ({ ...M, messages: HELLO, tools: TOOLS, tool_choice: 'required' }),
    toolResult: (call) => ({
      ...M,
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: '', tool_calls: [call] },
        { role: 'tool', content: '{"temp_c":14}', tool_call_id: call.id },
      ],
      tools: TOOLS,
    }),
    parallelOff: () => ({ ...M, messages: HELLO, tools: TOOLS, tool_choice: 'auto', parallel_tool_calls: false }),
    jsonObject: () => ({ ...M, messages: [JSON_HINT, ...HELLO], response_format: { type: 'json_object' } }),
    jsonSchema: () => ({ ...M, messages: HELLO, response_format: { type: 'json_schema', json_schema: { name: 'output', schema: SCHEMA } } }),
    length: () => ({ ...M, messages: HELLO, max_tokens: 2 }),
  },
}

export const SPECS: ProviderSpec[] = [openai, anthropic, google, mistral]
