// Encodes what gw streams to clients: `data: <json>` events (OpenAI chat, ending with `data: [DONE]`)
// and named `event: <name>` events (Anthropic Messages, OpenAI Responses).

export const SSE_DONE = 'data: [DONE]\n\n'

export function sseData(value: unknown): string {
  return `data: ${JSON.stringify(value)}\n\n`
}

export function sseEvent(name: string, value: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(value)}\n\n`
}

export const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
} as const
