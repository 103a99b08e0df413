// Encodes what gw streams to clients: `data: <json>` events and the closing `data: [DONE]`.

const encoder = new TextEncoder()

export const DONE_BYTES = encoder.encode('data: [DONE]\n\n')

export function sseData(value: unknown): Uint8Array {
  return sseText(JSON.stringify(value))
}

/** A `data:` event of JSON text already serialised. */
export function sseText(json: string): Uint8Array {
  return encoder.encode(`data: ${json}\n\n`)
}

export const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
} as const
