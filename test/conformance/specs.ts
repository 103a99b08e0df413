// The conformance suite's inputs, and per provider what must reach its upstream for each of them:
// whole bodies, so a field too many or too few fails.

import { expect } from 'bun:test'
import { exportPKCS8, generateKeyPair } from 'jose'
import { bedrockConverse } from '../fakes/bedrock'
import { type FakeGoogleOAuth, startFakeGoogleOAuth } from '../fakes/google-oauth'
import { startTestGateway, type TestGateway } from '../helpers/gateway'
import { type FakeProtocol, type FakeProvider, type FakeUpstream, startFake, startFakeImpl } from '../fakes/upstream'
import { vertexPublisher } from '../fakes/vertex'

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
  /** The matrix entry's name: a native provider, or a provider kind (PRODUCT §17). */
  name: string
  /** The model's prefix: the native provider, or the name of the org's provider record. */
  prefix: string
  /** The protocol the upstream speaks (its greeting names it). */
  protocol: FakeProtocol
  /** The model id at the provider (the gateway model is `prefix/id`). */
  id: string
  /** The model as the upstream names it, when not `id` (an Azure deployment). */
  upstreamModel?: string
  /** Starts the upstream fake. */
  start(): Promise<FakeUpstream>
  /** A native provider is set from its variables; a kind's record (the admin API's body) points at the fake. */
  record?(fake: FakeUpstream): Promise<object>
  /** Its embeddings model (as the provider names it) and the path the call reaches; none: the provider has no embeddings (400). */
  embeddings?: { id: string; path: string }
  /** The catalog (or the record) prices the model: its answers cost more than 0; otherwise unknown (null). */
  priced: boolean
  /** How the fake's "refusal" reaches the client: its finish, whether the log sees a refusal, whether `refusal` text is given (default: as logged). */
  refusal: { finish: string; logged: boolean; text?: boolean }
  path(stream: boolean): string
  /** The credential header the upstream got. */
  auth(fake: FakeUpstream): Record<string, string>
  /** Credential headers of other providers that must not reach this one. */
  notSent?: string[]
  /** Native stream events after which content has started but the answer is not complete. */
  eventsIntoContent: number
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

const native = (provider: FakeProvider) => ({ name: provider, prefix: provider, protocol: provider, priced: true, start: () => startFake(provider) })

const ANTHROPIC_TOOLS = [{ name: 'get_weather', description: 'Current weather in a city', input_schema: WEATHER_PARAMS }]
const GEMINI_TOOLS = [
  { functionDeclarations: [{ name: 'get_weather', description: 'Current weather in a city', parametersJsonSchema: WEATHER_PARAMS }] },
]
const geminiText = (text: string) => ({ role: 'user', parts: [{ text }] })

const openai: ProviderSpec = {
  ...native('openai'),
  embeddings: { id: 'text-embedding-3-small', path: '/v1/embeddings' },
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
  ...native('anthropic'),
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
  ...native('google'),
  embeddings: { id: 'gemini-embedding-001', path: '/v1beta/models/gemini-embedding-001:batchEmbedContents' },
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
  ...native('mistral'),
  embeddings: { id: 'mistral-embed', path: '/v1/embeddings' },
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

/** An OpenAI-compatible provider (PRODUCT §17) set by its record: OpenAI's wire with its own key. */
const compat: ProviderSpec = {
  ...openai,
  name: 'openai-compatible',
  prefix: 'compat',
  // A record without a price, not a preset the catalog prices.
  priced: false,
  start: () => startFake('openai', { apiKey: 'sk-compat-matrix-0123456789abcdef' }),
  record: async (fake) => ({ kind: 'openai-compatible', baseUrl: fake.url, apiKey: fake.apiKey }),
}

/** The same body without `model` (the deployment API and Vertex name the model in the URL). */
function withoutModel(sent: ProviderSpec['sent']): ProviderSpec['sent'] {
  const drop = (b: unknown) => {
    const { model: _, ...rest } = b as Record<string, unknown>
    return rest
  }
  return Object.fromEntries(Object.entries(sent).map(([k, f]) => [k, (call: Call) => drop((f as (c: Call) => unknown)(call))])) as ProviderSpec['sent']
}

const AZURE_API_VERSION = '2024-10-21'
/** Azure OpenAI's deployment API: the deployment in the URL, `api-key`, a first chunk with the prompt's filter results. */
const azure: ProviderSpec = {
  ...openai,
  name: 'azure',
  prefix: 'azure',
  upstreamModel: 'prod-4o',
  start: () => startFake('azure', { apiKey: 'azure-matrix-key-0123456789abcdef' }),
  record: async (fake) => ({ kind: 'azure', baseUrl: fake.url, apiKey: fake.apiKey, apiVersion: AZURE_API_VERSION, deployments: { 'gpt-4o': 'prod-4o' } }),
  path: () => `/openai/deployments/prod-4o/chat/completions?api-version=${AZURE_API_VERSION}`,
  // A model the record does not map is deployed under its own id.
  embeddings: { id: 'text-embedding-3-small', path: `/openai/deployments/text-embedding-3-small/embeddings?api-version=${AZURE_API_VERSION}` },
  auth: (fake) => ({ 'api-key': fake.apiKey }),
  notSent: ['authorization'],
  eventsIntoContent: 4,
  sent: withoutModel(openai.sent),
}

const VERTEX = { project: 'matrix-project', location: 'europe-west4' }
let vertexAuthority: Promise<{ oauth: FakeGoogleOAuth; pem: string }> | undefined
/** The token endpoint and service-account key both Vertex specs use (started once). */
function vertexAuth(): Promise<{ oauth: FakeGoogleOAuth; pem: string }> {
  vertexAuthority ??= (async () => {
    const pair = await generateKeyPair('RS256', { extractable: true })
    const oauth = startFakeGoogleOAuth({ clientEmail: 'matrix@matrix-project.iam.gserviceaccount.com', publicKey: pair.publicKey, keyId: 'matrix1', expiresIn: 3600 })
    return { oauth, pem: await exportPKCS8(pair.privateKey) }
  })()
  return vertexAuthority
}
/** Stops what the specs share (the Vertex token endpoint). */
export async function stopShared(): Promise<void> {
  const started = vertexAuthority
  vertexAuthority = undefined
  if (started) await (await started).oauth.stop()
}

const vertexRecord = async (fake: FakeUpstream) => {
  const { oauth, pem } = await vertexAuth()
  return { kind: 'vertex', ...VERTEX, serviceAccountKey: oauth.serviceAccountKey(pem, VERTEX.project), baseUrl: fake.url }
}
const vertexFake = (publisher: 'google' | 'anthropic') => async () => {
  const { oauth } = await vertexAuth()
  return startFakeImpl(vertexPublisher(publisher, { ...VERTEX, tokens: () => oauth.issued }), 'vertex-matrix-no-key')
}
const vertexPath = (publisher: string, model: string, call: string) =>
  `/v1/projects/${VERTEX.project}/locations/${VERTEX.location}/publishers/${publisher}/models/${encodeURIComponent(model)}:${call}`
const bearer = () => ({ authorization: expect.stringMatching(/^Bearer \S+$/) })

/** Gemini on Vertex AI: the Gemini body, an access token from the service-account key. */
const vertexGemini: ProviderSpec = {
  ...google,
  name: 'vertex-gemini',
  prefix: 'vertex-gemini',
  start: vertexFake('google'),
  record: vertexRecord,
  path: (stream) => vertexPath('google', google.id, stream ? 'streamGenerateContent?alt=sse' : 'generateContent'),
  embeddings: { id: 'text-embedding-005', path: vertexPath('google', 'text-embedding-005', 'predict') },
  auth: bearer,
  notSent: ['x-goog-api-key'],
}

/** Claude on Vertex AI: Anthropic's body with `anthropic_version: "vertex-2023-10-16"` and the model in the URL (rawPredict). */
const CLAUDE_ON_VERTEX = 'claude-haiku-4-5@20251001'
const vertexAnthropic: ProviderSpec = {
  ...anthropic,
  name: 'vertex-anthropic',
  prefix: 'vertex-claude',
  id: CLAUDE_ON_VERTEX,
  start: vertexFake('anthropic'),
  record: vertexRecord,
  path: (stream) => vertexPath('anthropic', CLAUDE_ON_VERTEX, stream ? 'streamRawPredict' : 'rawPredict'),
  embeddings: undefined,
  auth: bearer,
  notSent: ['x-api-key', 'anthropic-version'],
  sent: Object.fromEntries(
    Object.entries(withoutModel(anthropic.sent)).map(([k, f]) => [k, (call: Call) => ({ anthropic_version: 'vertex-2023-10-16', ...(f as (c: Call) => object)(call) })]),
  ) as ProviderSpec['sent'],
}

const BEDROCK_MODEL = 'anthropic.claude-3-5-haiku-20241022-v1:0'
const BEDROCK_TOOLS = [{ toolSpec: { name: 'get_weather', description: 'Current weather in a city', inputSchema: { json: WEATHER_PARAMS } } }]
const converseText = (text: string) => ({ role: 'user', content: [{ text }] })
const CONVERSE_HELLO = { messages: [converseText('Say hi please')] }
const jsonTool = (schema: object) => ({ toolSpec: { name: 'json_response', description: expect.any(String), inputSchema: { json: schema } } })

/** AWS Bedrock: Converse and ConverseStream (binary event-stream frames), every request SigV4-signed and checked by the fake. */
const bedrock: ProviderSpec = {
  name: 'bedrock',
  prefix: 'bedrock',
  protocol: 'bedrock',
  priced: true,
  id: BEDROCK_MODEL,
  start: async () => startFakeImpl(bedrockConverse({ region: 'eu-central-1', accessKeyId: 'AKIAMATRIXBEDROCK001' }), 'mAtRiXsEcReT/K7MDENG/bPxRfiCYEXAMPLEKEY0'),
  record: async (fake) => ({ kind: 'bedrock', region: 'eu-central-1', accessKeyId: 'AKIAMATRIXBEDROCK001', secretAccessKey: fake.apiKey, baseUrl: fake.url }),
  path: (stream) => `/model/${encodeURIComponent(BEDROCK_MODEL)}/${stream ? 'converse-stream' : 'converse'}`,
  embeddings: { id: 'cohere.embed-english-v3', path: '/model/cohere.embed-english-v3/invoke' },
  auth: () => ({
    authorization: expect.stringMatching(/^AWS4-HMAC-SHA256 Credential=AKIAMATRIXBEDROCK001\/\d{8}\/eu-central-1\/bedrock\/aws4_request, SignedHeaders=\S+, Signature=[0-9a-f]{64}$/),
    'x-amz-date': expect.stringMatching(/^\d{8}T\d{6}Z$/),
  }),
  notSent: ['x-api-key'],
  eventsIntoContent: 2,
  // A guardrail's intervention: its blocked message as content, finish content_filter, logged as a refusal.
  refusal: { finish: 'content_filter', logged: true, text: false },
  errorStatuses: [400, 403, 429, 500, 503],
  sent: {
    text: () => CONVERSE_HELLO,
    stream: () => CONVERSE_HELLO,
    system: () => ({ ...CONVERSE_HELLO, system: [{ text: 'Be brief' }, { text: 'Answer in English' }] }),
    multiTurn: () => ({
      messages: [
        converseText('Hi there'),
        { role: 'assistant', content: [{ text: 'Hello! How can I help?' }] },
        { role: 'user', content: [{ text: 'Tell me a joke' }, { text: 'a short one' }] },
      ],
    }),
    tools: () => ({ ...CONVERSE_HELLO, toolConfig: { tools: BEDROCK_TOOLS, toolChoice: { any: {} } } }),
    toolResult: (call) => ({
      messages: [
        converseText('Weather in Paris?'),
        { role: 'assistant', content: [{ toolUse: { toolUseId: call.id, name: 'get_weather', input: { city: 'x' } } }] },
        { role: 'user', content: [{ toolResult: { toolUseId: call.id, content: [{ text: '{"temp_c":14}' }] } }] },
      ],
      toolConfig: { tools: BEDROCK_TOOLS, toolChoice: { auto: {} } },
    }),
    // Converse has no parallel_tool_calls: dropped.
    parallelOff: () => ({ ...CONVERSE_HELLO, toolConfig: { tools: BEDROCK_TOOLS, toolChoice: { auto: {} } } }),
    // Structured output through a forced tool whose input schema is the schema; its input is the answer.
    jsonObject: () => ({ ...CONVERSE_HELLO, toolConfig: { tools: [jsonTool({ type: 'object' })], toolChoice: { tool: { name: 'json_response' } } } }),
    jsonSchema: () => ({ ...CONVERSE_HELLO, toolConfig: { tools: [jsonTool(SCHEMA)], toolChoice: { tool: { name: 'json_response' } } } }),
    length: () => ({ ...CONVERSE_HELLO, inferenceConfig: { maxTokens: 2 } }),
  },
}

export const SPECS: ProviderSpec[] = [openai, anthropic, google, mistral, compat, azure, bedrock, vertexGemini, vertexAnthropic]

/** What a spec's tests talk to: its model name, the greeting its fake says, its fake. */
export const modelOf = (s: ProviderSpec) => `${s.prefix}/${s.id}`
export const greetingOf = (s: ProviderSpec) => `Hello from fake-${s.protocol} (${s.upstreamModel ?? s.id}).`

/** One gateway in front of every spec's fake: the four from their variables, the kinds as records of the default org. */
export async function startMatrix(): Promise<{ gw: TestGateway; fakes: Record<string, FakeUpstream>; stop(): Promise<void> }> {
  const fakes: Record<string, FakeUpstream> = {}
  for (const s of SPECS) fakes[s.name] = await s.start()
  const natives = Object.fromEntries(SPECS.filter((s) => !s.record).map((s) => [s.prefix, fakes[s.name]]))
  const gw = await startTestGateway(natives)
  for (const s of SPECS) {
    if (!s.record) continue
    const res = await gw.admin('PUT', `/orgs/default/providers/${s.prefix}`, await s.record(fakes[s.name] as FakeUpstream))
    if (res.status !== 200) throw new Error(`${s.name}: its provider record was refused (${res.status}): ${await res.text()}`)
  }
  return {
    gw,
    fakes,
    async stop() {
      await gw.stop()
      for (const f of Object.values(fakes)) await f.stop()
      await stopShared()
    },
  }
}
