// Drives a gateway with requests whose upstream answers cycle through every fault, and reads a process's fds and RSS.

import { readdirSync, readFileSync } from 'node:fs'
import type { Behavior, FakeUpstream } from '../fakes/upstream'

/** Every kind of upstream trouble, in a fixed cycle (stalls need a short GW_UPSTREAM_TIMEOUT_MS). */
export const FAULT_CYCLE: Behavior[] = [
  { kind: 'reply' },
  { kind: 'error', status: 429, errorType: 'rate_limit', retryAfter: '0' },
  { kind: 'reset' },
  { kind: 'reply', chunkDelayMs: 2 },
  { kind: 'stall-after', events: 2 },
  { kind: 'error', status: 500, errorType: 'server' },
  { kind: 'cut-after', events: 3 },
  { kind: 'stall-headers' },
  { kind: 'error-event-after', events: 2 },
]

export interface LoadOptions {
  url: string
  key: string
  openai: FakeUpstream
  anthropic: FakeUpstream
  total: number
  concurrency: number
}

/** Sends `total` requests, `concurrency` at a time, half streamed, each with a fallback; returns status counts. */
export async function runFaultLoad(o: LoadOptions): Promise<Record<number, number>> {
  o.openai.enqueue(...Array.from({ length: o.total }, (_, i) => FAULT_CYCLE[i % FAULT_CYCLE.length] as Behavior))
  o.anthropic.enqueue(
    ...Array.from({ length: o.total }, (_, i): Behavior => (i % 3 === 0 ? { kind: 'error', status: 529, errorType: 'overloaded' } : { kind: 'reply' })),
  )
  const counts: Record<number, number> = {}
  let next = 0
  const worker = async () => {
    while (next < o.total) {
      const i = next++
      const res = await fetch(`${o.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `GwKey ${o.key}` },
        body: JSON.stringify({
          model: 'openai/gpt-4o-mini',
          messages: [{ role: 'user', content: `request ${i}` }],
          stream: i % 2 === 0,
          fallback_chain: [{ model: 'anthropic/claude-haiku-4-5' }],
        }),
      })
      await res.arrayBuffer().catch(() => undefined)
      counts[res.status] = (counts[res.status] ?? 0) + 1
    }
  }
  await Promise.all(Array.from({ length: o.concurrency }, worker))
  return counts
}

/** Open file descriptors (sockets included) and resident memory of a process. */
export function processStats(pid: number): { fds: number; rssMb: number } {
  const fds = readdirSync(`/proc/${pid}/fd`).length
  const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]
  return { fds, rssMb: Number(rss) / 1024 }
}
