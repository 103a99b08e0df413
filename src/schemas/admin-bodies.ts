// TypeBox schemas of the admin API bodies (PRODUCT §6).

import { Type as t } from '@sinclair/typebox'
import { PII_ENTITIES } from '../guardrails/entities'
import { FallbackEntryBody, validator } from './chat-body'
import { KeyScopesBody } from './people-bodies'
import { McpKeyPolicy, McpToolPolicy } from '../mcp/records'

const strings = t.Array(t.String({ minLength: 1 }))
const positive = t.Integer({ minimum: 1 })

const guardrailName = t.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$', description: 'named in errors, log entries and metrics' })
const guardrailOn = t.Union([t.Literal('input'), t.Literal('output'), t.Literal('both')], { description: 'what is checked: the request, the answer or both' })
const guardrailAction = t.Union([t.Literal('block'), t.Literal('redact'), t.Literal('mask')], {
  description: 'block: 400 guardrail_blocked; redact: replaced by [KIND]; mask: replaced by [KIND_n] upstream and restored in the answer',
})

/** One guardrail (PRODUCT §19); checked further by `checkGuardrails` (src/guardrails/config.ts). */
export const GuardrailBody = t.Union(
  [
    t.Object(
      {
        name: guardrailName,
        kind: t.Literal('pii'),
        on: guardrailOn,
        action: guardrailAction,
        entities: t.Array(
          t.Union(PII_ENTITIES.map((e) => t.Literal(e))),
          { minItems: 1, uniqueItems: true, description: 'email, phone, credit_card, iban, us_ssn, ip_address, secret' },
        ),
      },
      { additionalProperties: false },
    ),
    t.Object(
      {
        name: guardrailName,
        kind: t.Literal('regex'),
        on: guardrailOn,
        action: guardrailAction,
        patterns: t.Array(t.String({ minLength: 1, maxLength: 1000 }), { minItems: 1, maxItems: 50, description: 'RE2 syntax: no backreferences or lookaround' }),
      },
      { additionalProperties: false },
    ),
    t.Object(
      {
        name: guardrailName,
        kind: t.Literal('webhook'),
        on: guardrailOn,
        url: t.String({ pattern: '^https?://', maxLength: 2048 }),
        timeoutMs: t.Optional(t.Integer({ minimum: 1, maximum: 30_000, description: 'default 2000' })),
        failOpen: t.Boolean({ description: 'a webhook that is down, slow or answers badly lets the request through (true) or refuses it (false)' }),
      },
      { additionalProperties: false },
    ),
  ],
  { title: 'Guardrail' },
)

/** An org's policy; its type is the domain's `Policy` (src/domain/org.ts). */
export const PolicyBody = t.Object(
  {
    disabledProviders: t.Optional(strings),
    allowedModels: t.Optional(strings),
    maxTokens: t.Optional(positive),
    maxPromptTokens: t.Optional(positive),
    requestsPerMinute: t.Optional(positive),
    tokensPerMinute: t.Optional(positive),
    allowStreaming: t.Optional(t.Boolean()),
    blockedTerms: t.Optional(strings),
    requiredMetadata: t.Optional(strings),
    // Per-org override of GW_UPSTREAM_TIMEOUT_MS.
    upstreamTimeoutMs: t.Optional(t.Integer({ minimum: 1, maximum: 3_600_000 })),
    // Streams the org may have open at once, and one service key or token subject (docs/security.md, limits).
    maxConcurrentStreams: t.Optional(positive),
    maxConcurrentStreamsPerKey: t.Optional(positive),
    // Spending limits (PRODUCT §11).
    budgets: t.Optional(
      t.Array(
        t.Object(
          {
            scope: t.Union([t.Literal('org'), t.Literal('key'), t.Literal('endUser')]),
            usd: t.Number({ exclusiveMinimum: 0, maximum: 1e9 }),
            period: t.Union([t.Literal('day'), t.Literal('month'), t.Literal('total')]),
          },
          { additionalProperties: false },
        ),
        { maxItems: 20 },
      ),
    ),
    // Under a budget, models without a known price are refused unless this is true.
    allowUnpricedModels: t.Optional(t.Boolean()),
    // The exact response cache (PRODUCT §19; docs/policy.md, "Response cache").
    cache: t.Optional(
      t.Object(
        {
          mode: t.Union([t.Literal('off'), t.Literal('exact')], { description: 'exact: the same request answered from the cache' }),
          ttlSeconds: t.Integer({ minimum: 1, maximum: 2_592_000, description: 'how long an answer is kept (at most 30 days)' }),
          maxEntryBytes: t.Optional(t.Integer({ minimum: 1, maximum: 16_777_216, description: 'larger answers are not kept (default 1 MiB)' })),
        },
        { additionalProperties: false },
      ),
    ),
    // Anthropic prompt caching managed by gw (PRODUCT §19): cache breakpoints on long stable prefixes.
    promptCaching: t.Optional(t.Union([t.Literal('off'), t.Literal('auto')])),
    // Checks on what goes to providers and what comes back (PRODUCT §19; docs/policy.md, "Guardrails").
    guardrails: t.Optional(t.Array(GuardrailBody, { maxItems: 20 })),
    // The MCP gateway's tool policy and tool-call rate (PRODUCT §20).
    mcp: t.Optional(McpToolPolicy),
  },
  { additionalProperties: false, title: 'Policy' },
)

/** Route names are an org's own model names: no "/", so they never shadow a provider/model name. */
export const ROUTE_NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$'

export const RouteBody = t.Object(
  {
    targets: t.Array(
      t.Object({ model: t.String({ minLength: 1 }), weight: t.Optional(t.Number({ exclusiveMinimum: 0, maximum: 1e6 })) }, { additionalProperties: false }),
      { minItems: 1, maxItems: 20 },
    ),
    strategy: t.Optional(t.Union([t.Literal('weighted'), t.Literal('lowest-latency')])),
    fallback: t.Optional(t.Array(FallbackEntryBody, { maxItems: 10 })),
  },
  { additionalProperties: false, title: 'RouteBody' },
)
export const checkRouteBody = validator(RouteBody)

export const OrgBody = t.Object({ id: t.Optional(t.String()), name: t.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false, title: 'NewOrg' })
export const checkOrgBody = validator(OrgBody)
export const checkPolicyBody = validator(PolicyBody)
export const ProviderBody = t.Object(
  {
    apiKey: t.String({ minLength: 1 }),
    baseUrl: t.Optional(t.String()),
    enabled: t.Optional(t.Boolean()),
    weight: t.Optional(t.Number({ exclusiveMinimum: 0, maximum: 1e6 })),
  },
  { additionalProperties: false, title: 'ProviderKeyBody' },
)
export const checkProviderBody = validator(ProviderBody)
/** An OpenAI-compatible provider (PRODUCT §17, docs/providers.md "OpenAI-compatible providers"); `:provider` is its name. */
export const CompatProviderBody = t.Object(
  {
    kind: t.Literal('openai-compatible'),
    baseUrl: t.Optional(t.String({ description: "the upstream's OpenAI API root (…/v1); a preset's when omitted", maxLength: 2048 })),
    apiKey: t.Optional(t.String({ minLength: 1, description: 'sent as Authorization: Bearer; none for a local server' })),
    headers: t.Optional(t.Record(t.String({ pattern: '^[A-Za-z0-9!#$%&\'*+.^_`|~-]{1,64}$' }), t.String({ maxLength: 4096 }), { maxProperties: 20 })),
    models: t.Optional(t.Array(t.String({ minLength: 1, maxLength: 256 }), { maxItems: 1000 })),
    quirks: t.Optional(
      t.Object(
        {
          streamUsage: t.Optional(t.Boolean()),
          tools: t.Optional(t.Boolean()),
          jsonSchema: t.Optional(t.Union([t.Literal('json_schema'), t.Literal('json_object'), t.Literal('none')])),
          maxTokensField: t.Optional(t.Union([t.Literal('max_tokens'), t.Literal('max_completion_tokens')])),
          systemRole: t.Optional(t.Union([t.Literal('system'), t.Literal('user')])),
        },
        { additionalProperties: false },
      ),
    ),
    price: t.Optional(t.Object({ input: t.Number({ minimum: 0 }), output: t.Number({ minimum: 0 }) }, { additionalProperties: false, description: 'USD per million tokens' })),
    enabled: t.Optional(t.Boolean()),
    weight: t.Optional(t.Number({ exclusiveMinimum: 0, maximum: 1e6 })),
  },
  { additionalProperties: false, title: 'CompatProviderBody' },
)
export const checkCompatProviderBody = validator(CompatProviderBody)
/** Azure OpenAI (PRODUCT §17, docs/providers.md "Azure OpenAI"); `:provider` is its name (the model prefix). */
export const AzureProviderBody = t.Object(
  {
    kind: t.Literal('azure'),
    baseUrl: t.String({ description: 'the resource endpoint, https://<resource>.openai.azure.com (…/openai/v1 also taken)', maxLength: 2048 }),
    apiKey: t.String({ minLength: 1, description: 'sent as the api-key header' }),
    apiVersion: t.Optional(t.String({ pattern: '^[A-Za-z0-9._-]{1,64}$', description: 'set: the deployment API (…/openai/deployments/{deployment}/…?api-version=); unset: the v1 API' })),
    deployments: t.Optional(t.Record(t.String({ minLength: 1, maxLength: 256 }), t.String({ pattern: '^[A-Za-z0-9._-]{1,64}$' }), { maxProperties: 1000, description: 'model id → deployment name (a model not listed is deployed under its own id)' })),
    models: t.Optional(t.Array(t.String({ minLength: 1, maxLength: 256 }), { maxItems: 1000 })),
    price: t.Optional(t.Object({ input: t.Number({ minimum: 0 }), output: t.Number({ minimum: 0 }) }, { additionalProperties: false, description: "USD per million tokens; else the catalog's openai price for the same model id, else unknown" })),
    enabled: t.Optional(t.Boolean()),
    weight: t.Optional(t.Number({ exclusiveMinimum: 0, maximum: 1e6 })),
  },
  { additionalProperties: false, title: 'AzureProviderBody' },
)
export const checkAzureProviderBody = validator(AzureProviderBody)
/** A Google Vertex AI provider (PRODUCT §17, docs/providers.md "Google Vertex AI"); `:provider` is its name. */
export const VertexProviderBody = t.Object(
  {
    kind: t.Literal('vertex'),
    project: t.String({ pattern: '^[a-z0-9][a-z0-9-]{0,62}$', description: 'the Google Cloud project id' }),
    location: t.String({ pattern: '^[a-z0-9-]{1,40}$', description: 'the region, e.g. us-central1 (or global)' }),
    serviceAccountKey: t.Optional(t.Unknown({ description: "the service account's JSON key (an object, or its text); sealed, never shown back" })),
    serviceAccount: t.Optional(t.Unknown({ description: 'the same key, by the name PRODUCT §17 gives it (one of the two is required)' })),
    baseUrl: t.Optional(t.String({ description: 'default https://{location}-aiplatform.googleapis.com', maxLength: 2048 })),
    enabled: t.Optional(t.Boolean()),
    weight: t.Optional(t.Number({ exclusiveMinimum: 0, maximum: 1e6 })),
  },
  { additionalProperties: false, title: 'VertexProviderBody' },
)
export const checkVertexProviderBody = validator(VertexProviderBody)
/** An AWS Bedrock provider (PRODUCT §17, docs/providers.md "AWS Bedrock"); `:provider` is its name (the model prefix). */
export const BedrockProviderBody = t.Object(
  {
    kind: t.Literal('bedrock'),
    region: t.String({ pattern: '^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$', description: 'e.g. us-east-1' }),
    accessKeyId: t.Optional(t.String({ minLength: 16, maxLength: 128, pattern: '^[A-Z0-9]+$' })),
    secretAccessKey: t.Optional(t.String({ minLength: 1, maxLength: 256, description: 'never shown again' })),
    sessionToken: t.Optional(t.String({ minLength: 1, maxLength: 8192, description: 'temporary (STS) credentials' })),
    apiKey: t.Optional(t.String({ minLength: 1, maxLength: 8192, description: 'a Bedrock API key, sent as Authorization: Bearer, instead of access keys' })),
    baseUrl: t.Optional(t.String({ description: 'default https://bedrock-runtime.{region}.amazonaws.com', maxLength: 2048 })),
    enabled: t.Optional(t.Boolean()),
    weight: t.Optional(t.Number({ exclusiveMinimum: 0, maximum: 1e6 })),
  },
  { additionalProperties: false, title: 'BedrockProviderBody' },
)
export const checkBedrockProviderBody = validator(BedrockProviderBody)
/** What PUT /admin/orgs/:org/providers/:provider takes: a native provider's key, an OpenAI-compatible, an Azure OpenAI, a Vertex AI or a Bedrock provider. */
export const AnyProviderBody = t.Union([ProviderBody, CompatProviderBody, AzureProviderBody, VertexProviderBody, BedrockProviderBody], { title: 'AnyProviderBody' })
export const ServiceKeyBody = t.Object(
  {
    name: t.Optional(t.String({ maxLength: 200 })),
    requestsPerMinute: t.Optional(positive),
    tokensPerMinute: t.Optional(positive),
    /** When the key stops working: an ISO 8601 time in the future (PRODUCT §18). */
    expiresAt: t.Optional(t.String({ maxLength: 64 })),
    scopes: t.Optional(KeyScopesBody),
    mcp: t.Optional(McpKeyPolicy),
  },
  { additionalProperties: false, title: 'NewServiceKey' },
)
export const checkServiceKeyBody = validator(ServiceKeyBody)
export const SigningSecretBody = t.Object(
  {
    secret: t.Optional(t.String({ minLength: 32, maxLength: 512 })),
    kid: t.Optional(t.String({ pattern: '^[A-Za-z0-9._-]{1,64}$' })),
  },
  { additionalProperties: false, title: 'NewSigningSecret' },
)
export const checkSigningSecretBody = validator(SigningSecretBody)
export const OidcBody = t.Object(
  {
    issuer: t.String({ pattern: '^https?://[^/]' }),
    audience: t.String({ minLength: 1 }),
    jwksUri: t.Optional(t.String({ pattern: '^https?://[^/]' })),
    orgClaim: t.Optional(t.String({ minLength: 1, maxLength: 200 })),
  },
  { additionalProperties: false, title: 'OidcBody' },
)
export const checkOidcBody = validator(OidcBody)

export const SLUG_PATTERN = '^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$'
export const PARTIAL_NAME_PATTERN = '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$'

export const PromptBody = t.Object(
  { slug: t.String({ pattern: SLUG_PATTERN, maxLength: 128 }), name: t.Optional(t.String({ maxLength: 200 })) },
  { additionalProperties: false, title: 'NewPrompt' },
)
export const checkPromptBody = validator(PromptBody)
export const VariableDefBody = t.Object(
  {
    name: t.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }),
    type: t.Union([t.Literal('string'), t.Literal('number'), t.Literal('boolean'), t.Literal('json')]),
    required: t.Optional(t.Boolean()),
  },
  { additionalProperties: false },
)
export const PromptVersionBody = t.Object(
  {
    systemTemplate: t.Optional(t.String()),
    userTemplate: t.String({ minLength: 1 }),
    variables: t.Optional(t.Array(VariableDefBody, { maxItems: 200 })),
    model: t.String({ minLength: 1 }),
    temperature: t.Optional(t.Number({ minimum: 0, maximum: 2 })),
    maxTokens: t.Optional(positive),
    publish: t.Optional(t.Boolean()),
  },
  { additionalProperties: false, title: 'NewPromptVersion' },
)
export const checkPromptVersionBody = validator(PromptVersionBody)
export const PartialBody = t.Object({ template: t.String() }, { additionalProperties: false, title: 'PromptPartialBody' })
export const checkPartialBody = validator(PartialBody)
