// AWS Signature Version 4 for Bedrock requests: canonical request, string to sign, the headers to add.
// Our own code on Bun's HMAC-SHA256 rather than a package: no new dependency, and AWS's published test
// vectors (test/unit/sigv4.test.ts) prove it.

export interface AwsCredentials {
  accessKeyId: string
  secretAccessKey: string
  /** Temporary (STS) credentials: sent and signed as `x-amz-security-token`. */
  sessionToken?: string
}

export interface SigV4Request {
  method: string
  /**
   * The URL exactly as it goes on the wire: each path segment already percent-encoded once (a Bedrock
   * model id `a.b-v1:0` is `a.b-v1%3A0`), as `fetch` sends such a URL unchanged.
   */
  url: string
  /** Headers to sign besides `host` and the `x-amz-*` ones added here; pairs keep repeated names. */
  headers?: Record<string, string> | ReadonlyArray<readonly [string, string]>
  body?: Uint8Array | string
}

export interface SigV4Options {
  region: string
  /** `bedrock` for Bedrock's runtime API. */
  service: string
  credentials: AwsCredentials
  /** The signing time, epoch milliseconds (AWS refuses more than 5 minutes of skew). */
  now: number
  /** Send and sign `x-amz-content-sha256` (default true; AWS's test suite signs without it). */
  contentSha256Header?: boolean
}

/** The headers a signed request carries in addition to its own. */
export interface SigV4Headers {
  authorization: string
  'x-amz-date': string
  'x-amz-content-sha256'?: string
  'x-amz-security-token'?: string
}

const ALGORITHM = 'AWS4-HMAC-SHA256'

/** Headers never signed: set or changed by the HTTP client or proxies after signing. */
const UNSIGNED = new Set(['authorization', 'connection', 'content-length', 'expect', 'transfer-encoding', 'user-agent', 'x-amzn-trace-id'])

/** Headers this module sets itself; a caller's own copy is ignored. */
const SET_HERE = new Set(['host', 'x-amz-date', 'x-amz-content-sha256', 'x-amz-security-token'])

/** Derived signing keys kept: one per (secret, day, region, service); cleared whole when full. */
const SIGNING_KEY_CACHE_MAX = 64
const signingKeys = new Map<string, Buffer>()

const utf8 = new TextEncoder()

const sha256Hex = (data: Uint8Array | string): string => Bun.CryptoHasher.hash('sha256', data, 'hex')
const hmac = (key: Uint8Array | string, data: string): Buffer => new Bun.CryptoHasher('sha256', key).update(data).digest()

const UNRESERVED = /^[A-Za-z0-9\-._~]*$/

/** RFC 3986 encoding: everything but `A-Z a-z 0-9 - . _ ~` as UTF-8 `%XX` (upper-case hex). */
export function uriEncode(s: string): string {
  if (UNRESERVED.test(s)) return s
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s)
  } catch {
    return s
  }
}

/** `20150830T123600Z` */
export function amzDate(ms: number): string {
  return new Date(ms).toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '')
}

/** Splits a wire URL into authority, path and query without re-encoding anything. */
function splitUrl(url: string): { host: string; path: string; query: string } {
  const m = /^([a-z][a-z0-9+.-]*):\/\/([^/?#]*)([^?#]*)(?:\?([^#]*))?/i.exec(url)
  if (!m) throw new TypeError('sigv4: the URL must be absolute')
  // fetch leaves a scheme's default port out of the Host header, so the signature must too.
  const defaultPort = m[1]?.toLowerCase() === 'https' ? ':443' : ':80'
  const authority = (m[2] ?? '').toLowerCase()
  const host = authority.endsWith(defaultPort) ? authority.slice(0, -defaultPort.length) : authority
  return { host, path: m[3] || '/', query: m[4] ?? '' }
}

/** Non-S3 canonical URI: `.`/`..`/empty segments removed, each wire segment URI-encoded once more. */
function canonicalUri(path: string): string {
  const out: string[] = []
  for (const seg of path.split('/')) {
    if (seg === '' || seg === '.') continue
    if (seg === '..') out.pop()
    else out.push(uriEncode(seg))
  }
  const trailing = out.length > 0 && path.endsWith('/')
  return `/${out.join('/')}${trailing ? '/' : ''}`
}

/** Parameters decoded then encoded once, sorted by name then value (code-point order). */
function canonicalQuery(query: string): string {
  if (query === '') return ''
  const pairs: string[][] = []
  for (const piece of query.split('&')) {
    if (piece === '') continue
    const eq = piece.indexOf('=')
    const k = eq === -1 ? piece : piece.slice(0, eq)
    const v = eq === -1 ? '' : piece.slice(eq + 1)
    pairs.push([uriEncode(safeDecode(k)), uriEncode(safeDecode(v))])
  }
  pairs.sort((a, b) => cmp(a[0] ?? '', b[0] ?? '') || cmp(a[1] ?? '', b[1] ?? ''))
  return pairs.map(([k, v]) => `${k}=${v}`).join('&')
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

/** Leading or trailing whitespace, a run of it, or any but a plain space. */
const MESSY_SPACE = /^\s|\s$|\s\s|[^\S ]/

/** Lower-cased names; values trimmed, inner whitespace runs collapsed, repeated names joined by `,`. */
function canonicalHeaders(all: ReadonlyArray<readonly [string, string]>): { block: string; signed: string } {
  const byName = new Map<string, string>()
  for (const [name, value] of all) {
    const n = name.toLowerCase()
    if (UNSIGNED.has(n)) continue
    const v = MESSY_SPACE.test(value) ? value.trim().replace(/\s+/g, ' ') : value
    const prev = byName.get(n)
    byName.set(n, prev === undefined ? v : `${prev},${v}`)
  }
  const names = [...byName.keys()].sort(cmp)
  let block = ''
  for (const n of names) block += `${n}:${byName.get(n)}\n`
  return { block, signed: names.join(';') }
}

export interface CanonicalParts {
  canonicalRequest: string
  signedHeaders: string
  amzDate: string
  scope: string
  payloadHash: string
}

/** The canonical request AWS rebuilds from what it receives (exported so tests can compare it with AWS's). */
export function canonicalRequest(req: SigV4Request, opts: SigV4Options): CanonicalParts {
  const { host, path, query } = splitUrl(req.url)
  const date = amzDate(opts.now)
  const body = req.body ?? ''
  const payloadHash = sha256Hex(typeof body === 'string' ? utf8.encode(body) : body)
  const given = req.headers === undefined ? [] : Array.isArray(req.headers) ? req.headers : Object.entries(req.headers)
  // Host and the x-amz-* headers are set here, from the URL, the clock and the credentials.
  const own = given.filter(([name]) => !SET_HERE.has(name.toLowerCase()))
  const all: [string, string][] = [['host', host], ...own, ['x-amz-date', date]]
  if (opts.contentSha256Header !== false) all.push(['x-amz-content-sha256', payloadHash])
  if (opts.credentials.sessionToken) all.push(['x-amz-security-token', opts.credentials.sessionToken])
  const { block, signed } = canonicalHeaders(all)
  const canonical = `${req.method.toUpperCase()}\n${canonicalUri(path)}\n${canonicalQuery(query)}\n${block}\n${signed}\n${payloadHash}`
  return { canonicalRequest: canonical, signedHeaders: signed, amzDate: date, scope: `${date.slice(0, 8)}/${opts.region}/${opts.service}/aws4_request`, payloadHash }
}

function signingKey(secret: string, day: string, region: string, service: string): Buffer {
  const id = `${secret}\n${day}\n${region}\n${service}`
  let key = signingKeys.get(id)
  if (key === undefined) {
    key = hmac(hmac(hmac(hmac(`AWS4${secret}`, day), region), service), 'aws4_request')
    if (signingKeys.size >= SIGNING_KEY_CACHE_MAX) signingKeys.clear()
    signingKeys.set(id, key)
  }
  return key
}

/** Signs a request: the headers to add to it (the request's own headers must be sent unchanged). */
export function signSigV4(req: SigV4Request, opts: SigV4Options): SigV4Headers {
  const parts = canonicalRequest(req, opts)
  const stringToSign = `${ALGORITHM}\n${parts.amzDate}\n${parts.scope}\n${sha256Hex(parts.canonicalRequest)}`
  const key = signingKey(opts.credentials.secretAccessKey, parts.amzDate.slice(0, 8), opts.region, opts.service)
  const signature = new Bun.CryptoHasher('sha256', key).update(stringToSign).digest('hex')
  const out: SigV4Headers = {
    authorization: `${ALGORITHM} Credential=${opts.credentials.accessKeyId}/${parts.scope}, SignedHeaders=${parts.signedHeaders}, Signature=${signature}`,
    'x-amz-date': parts.amzDate,
  }
  if (opts.contentSha256Header !== false) out['x-amz-content-sha256'] = parts.payloadHash
  if (opts.credentials.sessionToken) out['x-amz-security-token'] = opts.credentials.sessionToken
  return out
}
