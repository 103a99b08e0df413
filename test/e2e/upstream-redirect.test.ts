// Upstream redirects are never followed (PRODUCT §4): provider keys must not reach another host.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startTestGateway, type TestGateway } from '../helpers/gateway'

let gw: TestGateway
let elsewhere: ReturnType<typeof Bun.serve>
let redirector: ReturnType<typeof Bun.serve>
const seenElsewhere: Record<string, string>[] = []

beforeAll(async () => {
  elsewhere = Bun.serve({
    port: 0,
    fetch(req) {
      seenElsewhere.push(Object.fromEntries(req.headers))
      return Response.json({ error: { message: 'should never be reached' } }, { status: 500 })
    },
  })
  redirector = Bun.serve({
    port: 0,
    fetch(req) {
      const url = new URL(req.url)
      return new Response(null, { status: Number(url.searchParams.get('s') ?? 307), headers: { location: `${elsewhere.url}steal${url.pathname}` } })
    },
  })
  gw = await startTestGateway({}, {})
})
afterAll(async () => {
  await gw.stop()
  elsewhere.stop(true)
  redirector.stop(true)
})

test.each([
  ['openai', 'openai/gpt-4o', 'authorization'],
  ['anthropic', 'anthropic/claude-haiku-4-5', 'x-api-key'],
  ['google', 'google/gemini-2.5-flash', 'x-goog-api-key'],
  ['mistral', 'mistral/mistral-small-latest', 'authorization'],
] as const)('%s: a 307 from the base URL is a provider_error and the key never reaches the other host', async (provider, model) => {
  const id = `redir-${provider}`
  await gw.admin('POST', '/orgs', { id, name: id })
  await gw.admin('PUT', `/orgs/${id}/providers/${provider}`, { apiKey: `secret-${provider}-key-1234`, baseUrl: `${redirector.url}v1` })
  const { key } = (await (await gw.admin('POST', `/orgs/${id}/service-keys`, {})).json()) as { key: string }
  for (const stream of [false, true]) {
    const res = await gw.chat({ model, stream, messages: [{ role: 'user', content: 'hi' }] }, { authorization: `GwKey ${key}` })
    const body = (await res.json()) as { code: string; message: string }
    expect({ status: res.status, code: body.code }).toEqual({ status: 502, code: 'provider_error' })
    expect(body.message).toMatch(/redirect/)
    expect(body.message).not.toContain(`secret-${provider}`)
  }
  expect(seenElsewhere).toEqual([])
})
