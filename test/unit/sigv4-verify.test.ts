// The fake's SigV4 check (test/fakes/sigv4-verify.ts) over a real socket: what gw's signer sends passes,
// and every change AWS would catch is refused the way AWS refuses it.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { signSigV4, type AwsCredentials } from '../../src/providers/bedrock/sigv4'
import { sigV4Refusal, verifySigV4 } from '../fakes/sigv4-verify'

const KEY: AwsCredentials = { accessKeyId: 'AKIAFAKEBEDROCK01', secretAccessKey: 'fake/Secret+Key/0123456789abcdefghijklmn' }
const TEMP: AwsCredentials = { accessKeyId: 'ASIAFAKEBEDROCK02', secretAccessKey: 'temp/Secret/Key', sessionToken: 'FwoGZXIvYXdzEXAMPLE//token==' }
const MODEL = 'anthropic.claude-3-5-sonnet-20240620-v1:0'

let server: ReturnType<typeof Bun.serve>
let base = ''
const seen: { path: string }[] = []

beforeAll(() => {
  server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      const body = new Uint8Array(await req.arrayBuffer())
      seen.push({ path: new URL(req.url).pathname })
      const v = verifySigV4(req, body, {
        region: 'us-east-1',
        service: 'bedrock',
        keys: { [KEY.accessKeyId]: { secretAccessKey: KEY.secretAccessKey }, [TEMP.accessKeyId]: { secretAccessKey: TEMP.secretAccessKey, sessionToken: TEMP.sessionToken } },
      })
      return v.ok ? Response.json({ accessKeyId: v.accessKeyId, signedHeaders: v.signedHeaders }) : sigV4Refusal(v)
    },
  })
  base = `http://127.0.0.1:${server.port}`
})
afterAll(() => server.stop(true))

interface Send {
  credentials?: AwsCredentials
  model?: string
  body?: string
  now?: number
  /** Changes made after signing. */
  after?: { body?: string; path?: string; headers?: Record<string, string> }
}

async function send(o: Send = {}): Promise<Response> {
  const url = `${base}/model/${encodeURIComponent(o.model ?? MODEL)}/converse`
  const body = o.body ?? JSON.stringify({ messages: [{ role: 'user', content: [{ text: 'Hi' }] }] })
  const headers = { 'content-type': 'application/json' }
  const signed = signSigV4({ method: 'POST', url, headers, body }, { region: 'us-east-1', service: 'bedrock', credentials: o.credentials ?? KEY, now: o.now ?? Date.now() })
  const finalUrl = o.after?.path ? `${base}${o.after.path}` : url
  return fetch(finalUrl, { method: 'POST', headers: { ...headers, ...signed, ...o.after?.headers }, body: o.after?.body ?? body })
}

async function refusal(res: Response, type: string): Promise<string> {
  expect(res.status).toBe(403)
  expect(res.headers.get('x-amzn-errortype')).toBe(type)
  const json = (await res.json()) as { message: string }
  return json.message
}

describe('SigV4 check of the fake', () => {
  test('a request signed by gw passes, the model id reaching the fake as %3A', async () => {
    const res = await send()
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ accessKeyId: KEY.accessKeyId, signedHeaders: ['content-type', 'host', 'x-amz-content-sha256', 'x-amz-date'] })
    expect(seen.at(-1)?.path).toBe('/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse')
  })

  test('temporary credentials pass with their session token, and fail without it', async () => {
    expect((await send({ credentials: TEMP })).status).toBe(200)
    const { sessionToken: _, ...noToken } = TEMP
    expect(await refusal(await send({ credentials: noToken }), 'UnrecognizedClientException')).toBe('The security token included in the request is invalid.')
  })

  test('an unsigned header added later is ignored, as AWS does', async () => {
    expect((await send({ after: { headers: { 'x-extra': '1' } } })).status).toBe(200)
  })

  test('a changed body is refused (InvalidSignatureException)', async () => {
    const msg = await refusal(await send({ after: { body: JSON.stringify({ messages: [{ role: 'user', content: [{ text: 'Ho' }] }] }) } }), 'InvalidSignatureException')
    expect(msg).toStartWith('The request signature we calculated does not match the signature you provided.')
  })

  test('a changed body with a matching x-amz-content-sha256 is still refused', async () => {
    const other = '{"messages":[]}'
    const hash = new Bun.CryptoHasher('sha256').update(other).digest('hex')
    await refusal(await send({ after: { body: other, headers: { 'x-amz-content-sha256': hash } } }), 'InvalidSignatureException')
  })

  test('a changed signed header is refused', async () => {
    await refusal(await send({ after: { headers: { 'content-type': 'text/plain' } } }), 'InvalidSignatureException')
  })

  test('a changed path is refused (another model)', async () => {
    await refusal(await send({ after: { path: `/model/${encodeURIComponent('anthropic.claude-3-haiku-20240307-v1:0')}/converse` } }), 'InvalidSignatureException')
  })

  test('the ":" sent raw instead of %3A is refused (the canonical URI differs)', async () => {
    await refusal(await send({ after: { path: `/model/${MODEL}/converse` } }), 'InvalidSignatureException')
  })

  test('a signature more than 5 minutes old, or ahead, is refused', async () => {
    expect(await refusal(await send({ now: Date.now() - 6 * 60_000 }), 'InvalidSignatureException')).toStartWith('Signature expired: ')
    expect(await refusal(await send({ now: Date.now() + 6 * 60_000 }), 'InvalidSignatureException')).toStartWith('Signature not yet current: ')
    expect((await send({ now: Date.now() - 4 * 60_000 })).status).toBe(200)
  })

  test('a wrong secret is refused; an unknown key id is unrecognised', async () => {
    await refusal(await send({ credentials: { ...KEY, secretAccessKey: 'wrong' } }), 'InvalidSignatureException')
    await refusal(await send({ credentials: { ...KEY, accessKeyId: 'AKIAUNKNOWN' } }), 'UnrecognizedClientException')
  })

  test('no Authorization header: MissingAuthenticationTokenException', async () => {
    const res = await fetch(`${base}/model/x/converse`, { method: 'POST', body: '{}' })
    expect(await refusal(res, 'MissingAuthenticationTokenException')).toBe('Missing Authentication Token')
  })
})
