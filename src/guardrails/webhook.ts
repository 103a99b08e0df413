// A webhook guardrail (PRODUCT §19): gw posts `{texts}` and applies `{allow, reason?, texts?}`; a webhook
// that is down, slow or answers out of shape follows the guardrail's `failOpen`.

import type { Guardrail } from './config'
import { readCapped } from '../http/read-capped'

type Webhook = Extract<Guardrail, { kind: 'webhook' }>

export const WEBHOOK_TIMEOUT_MS = 2000
/** The most of a webhook's answer gw reads. */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024

export interface WebhookResult {
  action: 'allow' | 'deny' | 'rewrite' | 'fail_open' | 'fail_closed'
  reason?: string
  /** The texts to send instead (rewrite), one per text posted. */
  texts?: string[]
}

function read(answer: unknown, count: number): WebhookResult | string {
  if (typeof answer !== 'object' || answer === null) return 'its answer is not a JSON object'
  const { allow, reason, texts } = answer as Record<string, unknown>
  if (typeof allow !== 'boolean') return 'its answer has no boolean "allow"'
  const why = typeof reason === 'string' ? reason.slice(0, 500) : undefined
  if (!allow) return { action: 'deny', reason: why }
  if (texts === undefined) return { action: 'allow' }
  if (!Array.isArray(texts) || texts.length !== count || !texts.every((t) => typeof t === 'string'))
    return `its "texts" is not a list of ${count} strings`
  return { action: 'rewrite', texts: texts as string[] }
}

/** Posts the texts and reads the verdict, within the guardrail's timeout; never throws but when the client left. */
export async function callWebhook(fetcher: typeof fetch, g: Webhook, texts: string[], signal: AbortSignal): Promise<WebhookResult> {
  const timeoutMs = g.timeoutMs ?? WEBHOOK_TIMEOUT_MS
  const failed = (why: string): WebhookResult => ({ action: g.failOpen ? 'fail_open' : 'fail_closed', reason: why })
  let outcome: WebhookResult | string
  try {
    const res = await fetcher(g.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ texts }),
      signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]),
      redirect: 'manual',
    })
    if (!res.ok) {
      res.body?.cancel().catch(() => {})
      return failed(`it answered HTTP ${res.status}`)
    }
    const body = await readCapped(res, MAX_ANSWER_BYTES)
    if (body === undefined) return failed('its answer is too large')
    outcome = read(JSON.parse(body), texts.length)
  } catch (err) {
    signal.throwIfAborted()
    const name = err instanceof Error ? err.name : ''
    return failed(name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : name === 'SyntaxError' ? 'its answer is not JSON' : 'it could not be reached')
  }
  return typeof outcome === 'string' ? failed(outcome) : outcome
}
