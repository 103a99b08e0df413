// The gateway fields as headers on /v1/messages, /v1/responses and /v1/embeddings (PRODUCT §12):
// `x-gw-prompt-id` links the log entry to the prompt, `x-gw-fallback-chain` decides the fallback and
// `x-gw-metadata` the entry's metadata — each winning over the body's field — and none of gw's fields
// reaches a provider.

import { beforeAll, expect, test } from 'bun:test'
import type { FakeProvider } from '../fakes/upstream'
import { useAllProviders } from '../helpers/all-providers'
import type { TestGateway } from '../helpers/gateway'

let gw: TestGateway
const { fakes } = useAllProviders((s) => {
  gw = s.gw
})

/** Two prompts: one the body names (by slug), one the header names (by id). */
const prompts: Record<'body' | 'header', { id: string; slug: string }> = {} as never
beforeAll(async () => {
  for (const which of ['body', 'header'] as const) {
    const slug = `linked-by-${which}`
    const res = await gw.admin('POST', '/orgs/default/prompts', { slug, name: slug })
    expect(res.status).toBe(201)
    prompts[which] = { id: ((await res.json()) as { id: string }).id, slug }
  }
})

const hi = [{ role: 'user', content: 'Say hi please' }]
const cases: {
  path: string
  body: Record<string, unknown>
  primary: FakeProvider
  /** The fallback chain of the body, and of the header (which wins). */
  bodyChain: string
  headerChain: string
}[] = [
  {
    path: '/v1/messages',
    body: { model: 'anthropic/claude-haiku-4-5', max_tokens: 50, messages: hi, metadata: { user_id: 'anthropic-own' } },
    primary: 'anthropic',
    bodyChain: 'mistral/mistral-small-latest',
    headerChain: 'google/gemini-2.5-flash',
  },
  {
    path: '/v1/responses',
    body: { model: 'openai/gpt-4o-mini', input: 'Say hi please', metadata: { openai: 'own' } },
    primary: 'openai',
    bodyChain: 'mistral/mistral-small-latest',
    headerChain: 'anthropic/claude-haiku-4-5',
  },
  {
    path: '/v1/embeddings',
    body: { model: 'openai/text-embedding-3-small', input: ['one', 'two'], metadata: { team: 'from-body' } },
    primary: 'openai',
    bodyChain: 'google/gemini-embedding-001',
    headerChain: 'mistral/mistral-embed',
  },
]

for (const c of cases) {
  test(`${c.path}: x-gw-prompt-id, x-gw-fallback-chain and x-gw-metadata win over the body; no gw field goes upstream`, async () => {
    fakes[c.primary].enqueue({ kind: 'error', status: 500, errorType: 'server' })
    const res = await gw.fetch(c.path, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-gw-prompt-id': prompts.header.id,
        'x-gw-fallback-chain': JSON.stringify([c.headerChain]),
        'x-gw-metadata': JSON.stringify({ team: 'from-header' }),
      },
      body: JSON.stringify({ ...c.body, prompt_id: prompts.body.slug, fallback_chain: [{ model: c.bodyChain }] }),
    })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-gw-fallback-model')).toBe(c.headerChain)
    const provider = (model: string) => fakes[model.split('/')[0] as FakeProvider]
    expect(provider(c.bodyChain).requests).toHaveLength(0)
    expect(provider(c.headerChain).requests).toHaveLength(1)

    // What the primary received: the client's body without gw's fields (its own metadata kept on the
    // Messages and Responses APIs, where `metadata` is the provider's field).
    const sent = fakes[c.primary].requests[0]?.body as Record<string, unknown>
    for (const f of ['prompt_id', 'fallback_chain', 'x-gw-prompt-id', 'x-gw-fallback-chain']) expect(sent).not.toHaveProperty(f)
    if (c.path === '/v1/embeddings') expect(sent).not.toHaveProperty('metadata')
    else expect(sent.metadata).toEqual(c.body.metadata)

    const log = await gw.log(res.headers.get('x-gw-request-id') as string)
    expect(log).toMatchObject({
      endpoint: c.path,
      promptId: prompts.header.id,
      promptSlug: prompts.header.slug,
      metadata: { team: 'from-header' },
      model: c.headerChain,
      fallback: { used: true, model: c.headerChain },
    })
    expect((log.attempts as { model: string; outcome: string }[]).map((a) => a.outcome)).toEqual(['provider_error', 'ok'])
  })

  test(`${c.path}: the body's prompt_id links the entry when no header is given`, async () => {
    const res = await gw.fetch(c.path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...c.body, prompt_id: prompts.body.slug }),
    })
    expect(res.status).toBe(200)
    const log = await gw.log(res.headers.get('x-gw-request-id') as string)
    expect(log).toMatchObject({ promptId: prompts.body.id, promptSlug: prompts.body.slug })
  })
}
