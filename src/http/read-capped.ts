// Reads a fetched answer's body up to a byte limit: an upstream (a provider, a guardrail webhook) that
// sends more is cut off there instead of filling memory.

/** The body's text, or undefined once it passes `max` bytes (the rest is not read; the body is cancelled). */
export async function readCapped(res: Response, max: number): Promise<string | undefined> {
  const declared = res.headers.get('content-length')
  if (declared !== null && Number(declared) > max) {
    res.body?.cancel().catch(() => {})
    return undefined
  }
  // A declared length within the limit is what the body holds (fetch fails a body longer than it says).
  if (declared !== null || !res.body) return res.text()
  const reader = res.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  try {
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      size += r.value.byteLength
      if (size > max) return undefined
      chunks.push(r.value)
    }
  } finally {
    reader.cancel().catch(() => {})
  }
  return Buffer.concat(chunks).toString('utf8')
}

/**
 * `fetchImpl` whose answers are read here up to `max` bytes: a longer one becomes an empty 502 (what
 * a library reading it, jose's remote key set, takes as a failed fetch).
 */
export function cappedFetch(fetchImpl: typeof fetch, max: number): (url: string | URL | Request, init?: RequestInit) => Promise<Response> {
  return async (url, init) => {
    const res = await fetchImpl(url, init)
    const text = await readCapped(res, max)
    return text === undefined ? new Response(null, { status: 502 }) : new Response(text, { status: res.status, headers: res.headers })
  }
}
