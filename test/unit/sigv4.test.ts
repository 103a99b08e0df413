// AWS Signature Version 4 (src/providers/bedrock/sigv4.ts) against AWS's published test vectors.

import { describe, expect, test } from 'bun:test'
import { canonicalRequest, signSigV4, type SigV4Options, type SigV4Request } from '../../src/providers/bedrock/sigv4'

/*
 * Vectors of AWS's "aws-sig-v4-test-suite" (the suite AWS published with the Signature Version 4
 * documentation), read from the copy in github:mhart/aws4 test/aws-sig-v4-test-suite at commit
 * 9d00a5acf4df38ec80f6918fa7f17fc06492e01f: each case's `.req` (request), `.creq` (canonical request)
 * and `.authz` (the signature of its Authorization header). Every case signs with the suite's
 * credentials, region `us-east-1`, service `service`, at 2015-08-30T12:36:00Z, and without
 * `x-amz-content-sha256` (the suite does not send it). A path in a `.req` is what went on the wire,
 * raw bytes included (get-utf8, get-space), so it is passed here as is.
 * Left out: get-header-value-multiline (obsolete header line folding, which fetch cannot send).
 */
const SUITE: SigV4Options = {
  region: 'us-east-1',
  service: 'service',
  credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' },
  now: Date.UTC(2015, 7, 30, 12, 36, 0),
  contentSha256Header: false,
}
const STS_TOKEN =
  'AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA=='
const EMPTY_SHA = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'

interface Case {
  name: string
  method: string
  target: string
  headers?: [string, string][]
  body?: string
  sessionToken?: string
  /** Canonical URI and query lines of the `.creq`. */
  uri: string
  query: string
  signedHeaders: string
  signature: string
}

const CASES: Case[] = [
  { name: 'get-vanilla', method: 'GET', target: '/', uri: '/', query: '', signedHeaders: 'host;x-amz-date', signature: '5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31' },
  { name: 'post-vanilla', method: 'POST', target: '/', uri: '/', query: '', signedHeaders: 'host;x-amz-date', signature: '5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b' },
  { name: 'get-vanilla-query-order-key-case', method: 'GET', target: '/?Param2=value2&Param1=value1', uri: '/', query: 'Param1=value1&Param2=value2', signedHeaders: 'host;x-amz-date', signature: 'b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500' },
  { name: 'get-vanilla-query-order-key', method: 'GET', target: '/?Param1=value2&Param1=Value1', uri: '/', query: 'Param1=Value1&Param1=value2', signedHeaders: 'host;x-amz-date', signature: 'eedbc4e291e521cf13422ffca22be7d2eb8146eecf653089df300a15b2382bd1' },
  { name: 'get-vanilla-query-order-value', method: 'GET', target: '/?Param1=value2&Param1=value1', uri: '/', query: 'Param1=value1&Param1=value2', signedHeaders: 'host;x-amz-date', signature: '5772eed61e12b33fae39ee5e7012498b51d56abc0abb7c60486157bd471c4694' },
  { name: 'get-vanilla-query-unreserved', method: 'GET', target: '/?-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz=-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz', uri: '/', query: '-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz=-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz', signedHeaders: 'host;x-amz-date', signature: '9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197' },
  { name: 'get-vanilla-utf8-query', method: 'GET', target: '/?\u1234=bar', uri: '/', query: '%E1%88%B4=bar', signedHeaders: 'host;x-amz-date', signature: '2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04' },
  { name: 'post-vanilla-query', method: 'POST', target: '/?Param1=value1', uri: '/', query: 'Param1=value1', signedHeaders: 'host;x-amz-date', signature: '28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11' },
  { name: 'get-vanilla-query', method: 'GET', target: '/', uri: '/', query: '', signedHeaders: 'host;x-amz-date', signature: '5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31' },
  { name: 'get-vanilla-empty-query-key', method: 'GET', target: '/?Param1=value1', uri: '/', query: 'Param1=value1', signedHeaders: 'host;x-amz-date', signature: 'a67d582fa61cc504c4bae71f336f98b97f1ea3c7a6bfe1b6e45aec72011b9aeb' },
  { name: 'post-vanilla-empty-query-value', method: 'POST', target: '/?Param1=value1', uri: '/', query: 'Param1=value1', signedHeaders: 'host;x-amz-date', signature: '28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11' },
  { name: 'post-header-key-case', method: 'POST', target: '/', uri: '/', query: '', signedHeaders: 'host;x-amz-date', signature: '5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b' },
  { name: 'get-unreserved', method: 'GET', target: '/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz', uri: '/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz', query: '', signedHeaders: 'host;x-amz-date', signature: '07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f' },
  { name: 'get-utf8', method: 'GET', target: '/\u1234', uri: '/%E1%88%B4', query: '', signedHeaders: 'host;x-amz-date', signature: '8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85' },
  { name: 'get-space', method: 'GET', target: '/example space/', uri: '/example%20space/', query: '', signedHeaders: 'host;x-amz-date', signature: '652487583200325589f1fba4c7e578f72c47cb61beeca81406b39ddec1366741' },
  { name: 'get-slash', method: 'GET', target: '//', uri: '/', query: '', signedHeaders: 'host;x-amz-date', signature: '5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31' },
  { name: 'get-slashes', method: 'GET', target: '//example//', uri: '/example/', query: '', signedHeaders: 'host;x-amz-date', signature: '9a624bd73a37c9a373b5312afbebe7a714a789de108f0bdfe846570885f57e84' },
  { name: 'get-slash-dot-slash', method: 'GET', target: '/./', uri: '/', query: '', signedHeaders: 'host;x-amz-date', signature: '5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31' },
  { name: 'get-slash-pointless-dot', method: 'GET', target: '/./example', uri: '/example', query: '', signedHeaders: 'host;x-amz-date', signature: 'ef75d96142cf21edca26f06005da7988e4f8dc83a165a80865db7089db637ec5' },
  { name: 'get-relative', method: 'GET', target: '/example/..', uri: '/', query: '', signedHeaders: 'host;x-amz-date', signature: '5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31' },
  { name: 'get-relative-relative', method: 'GET', target: '/example1/example2/../..', uri: '/', query: '', signedHeaders: 'host;x-amz-date', signature: '5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31' },
  { name: 'get-header-key-duplicate', method: 'GET', target: '/', headers: [['My-Header1', 'value2'], ['My-Header1', 'value2'], ['My-Header1', 'value1']], uri: '/', query: '', signedHeaders: 'host;my-header1;x-amz-date', signature: 'c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea' },
  { name: 'get-header-value-order', method: 'GET', target: '/', headers: [['My-Header1', 'value4'], ['My-Header1', 'value1'], ['My-Header1', 'value3'], ['My-Header1', 'value2']], uri: '/', query: '', signedHeaders: 'host;my-header1;x-amz-date', signature: '08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01' },
  { name: 'get-header-value-trim', method: 'GET', target: '/', headers: [['My-Header1', ' value1'], ['My-Header2', ' "a   b   c"']], uri: '/', query: '', signedHeaders: 'host;my-header1;my-header2;x-amz-date', signature: 'acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736' },
  { name: 'post-header-key-sort', method: 'POST', target: '/', headers: [['My-Header1', 'value1']], uri: '/', query: '', signedHeaders: 'host;my-header1;x-amz-date', signature: 'c5410059b04c1ee005303aed430f6e6645f61f4dc9e1461ec8f8916fdf18852c' },
  { name: 'post-header-value-case', method: 'POST', target: '/', headers: [['My-Header1', 'VALUE1']], uri: '/', query: '', signedHeaders: 'host;my-header1;x-amz-date', signature: 'cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d' },
  { name: 'post-sts-header-before', method: 'POST', target: '/', sessionToken: STS_TOKEN, uri: '/', query: '', signedHeaders: 'host;x-amz-date;x-amz-security-token', signature: '85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead' },
  { name: 'post-x-www-form-urlencoded', method: 'POST', target: '/', headers: [['Content-Type', 'application/x-www-form-urlencoded']], body: 'Param1=value1', uri: '/', query: '', signedHeaders: 'content-type;host;x-amz-date', signature: 'ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a' },
  { name: 'post-x-www-form-urlencoded-parameters', method: 'POST', target: '/', headers: [['Content-Type', 'application/x-www-form-urlencoded; charset=utf8']], body: 'Param1=value1', uri: '/', query: '', signedHeaders: 'content-type;host;x-amz-date', signature: '1a72ec8f64bd914b0e42e42607c7fbce7fb2c7465f63e3092b3b0d39fa77a6fe' },
]

function suiteRequest(c: Case): { req: SigV4Request; opts: SigV4Options } {
  const req: SigV4Request = { method: c.method, url: `https://example.amazonaws.com${c.target}`, headers: c.headers ?? [], body: c.body ?? '' }
  const credentials = c.sessionToken ? { ...SUITE.credentials, sessionToken: c.sessionToken } : SUITE.credentials
  return { req, opts: { ...SUITE, credentials } }
}

describe('AWS SigV4 test suite', () => {
  for (const c of CASES) {
    test(c.name, () => {
      const { req, opts } = suiteRequest(c)
      const lines = canonicalRequest(req, opts).canonicalRequest.split('\n')
      expect(lines[0]).toBe(c.method)
      expect(lines[1]).toBe(c.uri)
      expect(lines[2]).toBe(c.query)
      expect(lines.at(-2)).toBe(c.signedHeaders)
      expect(lines.at(-1)).toBe(c.body ? '9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e' : EMPTY_SHA)
      const h = signSigV4(req, opts)
      expect(h.authorization).toBe(
        `AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=${c.signedHeaders}, Signature=${c.signature}`,
      )
      expect(h['x-amz-date']).toBe('20150830T123600Z')
      expect(h['x-amz-content-sha256']).toBeUndefined()
      expect(h['x-amz-security-token']).toBe(c.sessionToken)
    })
  }

  test('get-header-value-trim: the full canonical request, line for line', () => {
    const c = CASES.find((x) => x.name === 'get-header-value-trim')
    if (!c) throw new Error('case missing')
    const { req, opts } = suiteRequest(c)
    expect(canonicalRequest(req, opts).canonicalRequest).toBe(
      ['GET', '/', '', 'host:example.amazonaws.com', 'my-header1:value1', 'my-header2:"a b c"', 'x-amz-date:20150830T123600Z', '', 'host;my-header1;my-header2;x-amz-date', EMPTY_SHA].join('\n'),
    )
  })

  test('post-sts-header-after: a token added after signing leaves the signature of post-vanilla', () => {
    const c = CASES.find((x) => x.name === 'post-vanilla')
    if (!c) throw new Error('case missing')
    const { req, opts } = suiteRequest(c)
    expect(signSigV4(req, opts).authorization).toEndWith('Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b')
  })
})

describe('Bedrock requests', () => {
  const modelId = 'anthropic.claude-3-5-sonnet-20240620-v1:0'
  const url = `https://bedrock-runtime.us-east-1.amazonaws.com/model/${encodeURIComponent(modelId)}/converse`
  const body = JSON.stringify({ messages: [{ role: 'user', content: [{ text: 'Hello' }] }] })
  const opts: SigV4Options = {
    region: 'us-east-1',
    service: 'bedrock',
    credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' },
    now: Date.UTC(2026, 10, 27, 3, 0, 0),
  }

  test('the model id ":" goes on the wire as %3A and is encoded again (%253A) in the canonical URI', () => {
    expect(url).toContain('v1%3A0/converse')
    const parts = canonicalRequest({ method: 'POST', url, headers: { 'content-type': 'application/json' }, body }, opts)
    expect(parts.canonicalRequest.split('\n')[1]).toBe('/model/anthropic.claude-3-5-sonnet-20240620-v1%253A0/converse')
    expect(parts.signedHeaders).toBe('content-type;host;x-amz-content-sha256;x-amz-date')
    expect(parts.scope).toBe('20261127/us-east-1/bedrock/aws4_request')
  })

  test('x-amz-content-sha256 is the SHA-256 of the body; a session token is sent and signed', () => {
    const h = signSigV4({ method: 'POST', url, headers: { 'content-type': 'application/json' }, body }, { ...opts, credentials: { ...opts.credentials, sessionToken: 'tok' } })
    expect(h['x-amz-content-sha256']).toBe(new Bun.CryptoHasher('sha256').update(body).digest('hex'))
    expect(h['x-amz-security-token']).toBe('tok')
    expect(h.authorization).toContain('SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token,')
    expect(h['x-amz-date']).toBe('20261127T030000Z')
  })

  test('headers the HTTP client sets itself are not signed', () => {
    const h = signSigV4({ method: 'POST', url, headers: { 'Content-Length': '5', 'User-Agent': 'gw', Authorization: 'x' }, body }, opts)
    expect(h.authorization).toContain('SignedHeaders=host;x-amz-content-sha256;x-amz-date,')
  })

  test("the caller's own host or x-amz-date is ignored; a default port is left out of host as fetch does", () => {
    const plain = canonicalRequest({ method: 'POST', url, body }, opts).canonicalRequest
    expect(canonicalRequest({ method: 'POST', url, body, headers: { Host: 'evil.example', 'X-Amz-Date': '20000101T000000Z' } }, opts).canonicalRequest).toBe(plain)
    expect(canonicalRequest({ method: 'POST', url: url.replace('.com/', '.com:443/'), body }, opts).canonicalRequest).toBe(plain)
    expect(canonicalRequest({ method: 'POST', url: url.replace('.com/', '.com:8443/'), body }, opts).canonicalRequest).toContain('\nhost:bedrock-runtime.us-east-1.amazonaws.com:8443\n')
  })

  test('another day, region or secret gives another signature (the signing key cache is keyed on all of them)', () => {
    const req = { method: 'POST', url, body }
    const base = signSigV4(req, opts).authorization
    expect(signSigV4(req, opts).authorization).toBe(base)
    expect(signSigV4(req, { ...opts, now: opts.now + 86_400_000 }).authorization).not.toBe(base)
    expect(signSigV4(req, { ...opts, region: 'us-west-2' }).authorization).not.toBe(base)
    const other = signSigV4(req, { ...opts, credentials: { ...opts.credentials, secretAccessKey: 'other' } }).authorization
    expect(other.split('Signature=')[1]).not.toBe(base.split('Signature=')[1])
  })
})
