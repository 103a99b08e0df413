// The SigV4 check of the fake AWS endpoints: rebuilds the canonical request from the request received and refuses what AWS would.
//
// Written apart from src/providers/bedrock/sigv4.ts on purpose (node:crypto, its own encoding and path
// rules), so a signer bug is not mirrored here. Rules: AWS's "Create a signed AWS API request" (Signature
// Version 4) documentation; refusals as AWS JSON services send them (status 403, `x-amzn-errortype`,
// body `{"message": …}`), messages as in AWS's "Common Errors" API reference.

import { createHash, createHmac, timingSafeEqual } from 'node:crypto'

export interface FakeAwsKey {
  secretAccessKey: string
  /** Temporary credentials: the request must carry this `x-amz-security-token`. */
  sessionToken?: string
}

export interface SigV4VerifyOptions {
  region: string
  service: string
  /** The access keys the fake knows, by access key id. */
  keys: Record<string, FakeAwsKey>
  /** The fake's clock (epoch ms); default Date.now. */
  now?: () => number
  /** Most clock skew accepted; AWS's is 5 minutes. */
  maxSkewMs?: number
}

export type SigV4Verdict =
  | { ok: true; accessKeyId: string; signedHeaders: string[] }
  | { ok: false; status: 403; errorType: string; message: string }

const SKEW_MS = 5 * 60_000
const MISMATCH =
  'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.'

const refuse = (errorType: string, message: string): SigV4Verdict => ({ ok: false, status: 403, errorType, message })

/** RFC 3986 percent-encoding over the UTF-8 bytes, unreserved characters kept. */
function pct(s: string): string {
  let out = ''
  for (const b of Buffer.from(s, 'utf8')) {
    const c = String.fromCharCode(b)
    out += /[A-Za-z0-9\-._~]/.test(c) ? c : `%${b.toString(16).toUpperCase().padStart(2, '0')}`
  }
  return out
}

function unpct(s: string): string {
  try {
    return decodeURIComponent(s)
  } catch {
    return s
  }
}

/** The received path with dot segments and repeated slashes resolved, each segment encoded again. */
function pathOf(raw: string): string {
  const stack: string[] = []
  const segs = raw.split('/').filter((s) => s.length > 0)
  for (const s of segs) {
    if (s === '..') stack.pop()
    else if (s !== '.') stack.push(s)
  }
  if (stack.length === 0) return '/'
  return `/${stack.map(pct).join('/')}${raw.endsWith('/') ? '/' : ''}`
}

function queryOf(raw: string): string {
  const params = raw
    .split('&')
    .filter(Boolean)
    .map((p) => {
      const [k = '', ...rest] = p.split('=')
      return `${pct(unpct(k))}=${pct(unpct(rest.join('=')))}`
    })
  return params.sort().join('&')
}

const AUTH = /^AWS4-HMAC-SHA256 Credential=([^/,\s]+)\/(\d{8})\/([^/,\s]+)\/([^/,\s]+)\/aws4_request,\s*SignedHeaders=([a-z0-9;-]+),\s*Signature=([0-9a-f]{64})$/

/** `20150830T123600Z` → epoch ms (NaN when malformed). */
function parseAmzDate(s: string): number {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(s)
  return m ? Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!) : Number.NaN
}

const fmt = (ms: number) => new Date(ms).toISOString().replace(/[-:]|\.\d+/g, '')

/** Checks a received request's signature as AWS does; `body` is the body exactly as received. */
export function verifySigV4(req: Request, body: Uint8Array, opts: SigV4VerifyOptions): SigV4Verdict {
  const auth = req.headers.get('authorization')
  if (!auth) return refuse('MissingAuthenticationTokenException', 'Missing Authentication Token')
  const m = AUTH.exec(auth)
  if (!m) return refuse('IncompleteSignatureException', `Authorization header requires 'Credential', 'Signature' and 'SignedHeaders' parameters. Authorization=${auth.split(' ')[0]}`)
  const [, keyId = '', day = '', region, service, signedList = '', signature = ''] = m
  const key = opts.keys[keyId]
  if (!key) return refuse('UnrecognizedClientException', 'The security token included in the request is invalid.')
  if (key.sessionToken !== undefined && req.headers.get('x-amz-security-token') !== key.sessionToken) {
    return refuse('UnrecognizedClientException', 'The security token included in the request is invalid.')
  }
  const dateHeader = req.headers.get('x-amz-date') ?? ''
  const at = parseAmzDate(dateHeader)
  if (Number.isNaN(at)) return refuse('IncompleteSignatureException', 'Authorization header requires existence of either a \'X-Amz-Date\' or a \'Date\' header.')
  const now = (opts.now ?? Date.now)()
  const skew = opts.maxSkewMs ?? SKEW_MS
  if (at < now - skew) return refuse('InvalidSignatureException', `Signature expired: ${dateHeader} is now earlier than ${fmt(now - skew)} (${fmt(now)} - 5 min.)`)
  if (at > now + skew) return refuse('InvalidSignatureException', `Signature not yet current: ${dateHeader} is still later than ${fmt(now + skew)} (${fmt(now)} + 5 min.)`)
  if (day !== dateHeader.slice(0, 8)) return refuse('InvalidSignatureException', `Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '${day}' != '${dateHeader.slice(0, 8)}', from '${dateHeader}'.`)
  if (region !== opts.region) return refuse('InvalidSignatureException', `Credential should be scoped to a valid region. `)
  if (service !== opts.service) return refuse('InvalidSignatureException', `Credential should be scoped to correct service: '${opts.service}'. `)

  const signed = signedList.split(';')
  if (!signed.includes('host')) return refuse('InvalidSignatureException', "'Host' must be a 'SignedHeader' in the AWS Authorization.")
  const headerLines: string[] = []
  for (const name of signed) {
    const value = req.headers.get(name)
    if (value === null) return refuse('InvalidSignatureException', MISMATCH)
    // Headers joins repeated names with ", "; AWS's canonical form joins them with ",".
    headerLines.push(`${name}:${value.split(/\s*,\s*/).map((v) => v.trim().replace(/\s+/g, ' ')).join(',')}`)
  }
  const payloadHash = createHash('sha256').update(body).digest('hex')
  const claimed = req.headers.get('x-amz-content-sha256')
  if (claimed !== null && claimed !== payloadHash && claimed !== 'UNSIGNED-PAYLOAD') return refuse('InvalidSignatureException', MISMATCH)
  const url = new URL(req.url)
  const canonical = [req.method, pathOf(url.pathname), queryOf(url.search.replace(/^\?/, '')), `${headerLines.join('\n')}\n`, signedList, payloadHash].join('\n')
  const scope = `${day}/${region}/${service}/aws4_request`
  const toSign = ['AWS4-HMAC-SHA256', dateHeader, scope, createHash('sha256').update(canonical).digest('hex')].join('\n')
  let k: Buffer = createHmac('sha256', `AWS4${key.secretAccessKey}`).update(day).digest()
  for (const part of [region ?? '', service ?? '', 'aws4_request']) k = createHmac('sha256', k).update(part).digest()
  const expected = createHmac('sha256', k).update(toSign).digest()
  const given = Buffer.from(signature, 'hex')
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return refuse('InvalidSignatureException', MISMATCH)
  return { ok: true, accessKeyId: keyId, signedHeaders: signed }
}

/** A refusal as AWS sends it: 403, `x-amzn-errortype`, JSON `{"message": …}`. */
export function sigV4Refusal(verdict: Extract<SigV4Verdict, { ok: false }>): Response {
  return Response.json(
    { message: verdict.message },
    { status: verdict.status, headers: { 'x-amzn-errortype': verdict.errorType, 'x-amzn-requestid': crypto.randomUUID() } },
  )
}
