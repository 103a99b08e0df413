// The benchmark upstream's answers (bench/fake-upstream.ts, bench/endpoint-cpu.ts): OpenAI and Anthropic
// chat answers at once, JSON or a 20-chunk stream; models with "slow" drip.

const CHUNKS = 20
const enc = new TextEncoder()
const words = Array.from({ length: CHUNKS }, (_, i) => `w${i} `)
const text = words.join('')
const usage = { prompt_tokens: 12, completion_tokens: CHUNKS, total_tokens: 12 + CHUNKS }

const openaiJson = (model: string) =>
  JSON.stringify({
    id: 'chatcmpl-bench',
    object: 'chat.completion',
    created: 1_700_000_000,
    model,
    choices: [{ index: 0, message: { role: 'assistant', content: text, refusal: null }, logprobs: null, finish_reason: 'stop' }],
    usage,
  })

function openaiEvents(model: string): string[] {
  const chunk = (delta: object, finish: string | null, u?: object) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1_700_000_000, model, choices: u ? [] : [{ index: 0, delta, logprobs: null, finish_reason: finish }], ...(u ? { usage: u } : {}) })}\n\n`
  return [
    chunk({ role: 'assistant', content: '' }, null),
    ...words.map((w) => chunk({ content: w }, null)),
    chunk({}, 'stop'),
    chunk({}, null, usage),
    'data: [DONE]\n\n',
  ]
}

const anthropicJson = (model: string) =>
  JSON.stringify({
    id: 'msg_bench',
    type: 'message',
    role: 'assistant',
    model,
    content: [{ type: 'text', text }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 12, output_tokens: CHUNKS, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
  })

function anthropicEvents(model: string): string[] {
  const ev = (name: string, data: object) => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`
  return [
    ev('message_start', { message: { id: 'msg_bench', type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 12, output_tokens: 1 } } }),
    ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
    ...words.map((w) => ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: w } })),
    ev('content_block_stop', { index: 0 }),
    ev('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: CHUNKS } }),
    ev('message_stop', {}),
  ]
}

function sse(events: string[], dripMs: number): Response {
  const body =
    dripMs > 0
      ? new ReadableStream<Uint8Array>({
          async pull(c) {
            const next = events.shift()
            if (next === undefined) return c.close()
            await Bun.sleep(dripMs)
            c.enqueue(enc.encode(next))
          },
        })
      : enc.encode(events.join(''))
  return new Response(body, { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } })
}

/** The answer to a POST on `path` (OpenAI `…/chat/completions` or Anthropic `…/messages`); undefined: not served. */
export function fakeAnswer(path: string, body: { model: string; stream?: boolean }): Response | undefined {
  const drip = body.model.includes('slow') ? 500 : 0
  if (path.endsWith('/chat/completions'))
    return body.stream ? sse(openaiEvents(body.model), drip) : new Response(openaiJson(body.model), { headers: { 'content-type': 'application/json' } })
  if (path.endsWith('/messages'))
    return body.stream ? sse(anthropicEvents(body.model), drip) : new Response(anthropicJson(body.model), { headers: { 'content-type': 'application/json' } })
  return undefined
}

/** The bench upstream served in process, as gw's `fetch` (no sockets): for benches of gw's own handling. */
export const fakeFetch = (async (input: string | URL | Request, init?: RequestInit) => {
  const url = new URL(input instanceof Request ? input.url : String(input))
  const body = JSON.parse(String(init?.body)) as { model: string; stream?: boolean }
  return fakeAnswer(url.pathname, body) ?? new Response('{}', { status: 404 })
}) as typeof fetch
