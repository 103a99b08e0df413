// The dashboard's only way to the server: the admin API and the session endpoints, with the CSRF header on changes.

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly requestId: string | null,
  ) {
    super(message)
  }
}

let csrf = ''
let onSignedOut = () => {}

export function setSession(token: string, signedOut: () => void): void {
  csrf = token
  onSignedOut = signedOut
}

/** fetch against gw; a JSON error body becomes an ApiError carrying the server's message. */
export async function request(method: string, path: string, body?: unknown): Promise<Response> {
  // gw's own error shape whatever GW_ERROR_FORMAT says (the messages below read it).
  const headers: Record<string, string> = { 'x-gw-error-format': 'gw' }
  if (body !== undefined) headers['content-type'] = 'application/json'
  if (method !== 'GET') headers['x-gw-csrf'] = csrf
  const res = await fetch(path, { method, headers, credentials: 'same-origin', ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
  if (res.ok) return res
  let message = `HTTP ${res.status}`
  try {
    const e = (await res.json()) as { message?: string }
    if (e.message) message = e.message
  } catch {}
  if (res.status === 401 && path.startsWith('/admin/')) onSignedOut()
  throw new ApiError(res.status, message, res.headers.get('x-gw-request-id'))
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await request(method, path, body)
  return (res.status === 204 ? null : await res.json()) as T
}

export const get = <T>(path: string) => api<T>('GET', path)

/** `/admin/orgs/<org><rest>` with the org id encoded. */
export const orgPath = (org: string, rest = '') => `/admin/orgs/${encodeURIComponent(org)}${rest}`

/** `/admin/users/<id><rest>`, the id encoded. */
export const userPath = (id: string, rest = '') => `/admin/users/${encodeURIComponent(id)}${rest}`

/** A query string from the defined, non-empty values. */
export function query(params: Record<string, string | number | undefined | string[]>): string {
  const q = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) {
    if (Array.isArray(v)) for (const x of v) q.append(k, x)
    else if (v !== undefined && v !== '') q.set(k, String(v))
  }
  const s = q.toString()
  return s ? `?${s}` : ''
}

/** Reads an SSE answer, calling `onData` with each `data:` payload (without `[DONE]`). */
export async function readEvents(res: Response, onData: (data: unknown) => void): Promise<void> {
  const reader = (res.body as ReadableStream<Uint8Array>).getReader()
  const decoder = new TextDecoder()
  let buf = ''
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    buf += decoder.decode(value, { stream: true })
    let cut = buf.indexOf('\n\n')
    while (cut >= 0) {
      const block = buf.slice(0, cut)
      buf = buf.slice(cut + 2)
      for (const line of block.split('\n'))
        if (line.startsWith('data: ') && line !== 'data: [DONE]') onData(JSON.parse(line.slice(6)))
      cut = buf.indexOf('\n\n')
    }
  }
}
