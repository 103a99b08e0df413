// A gateway in front of all four fake upstreams for a test file: started before its tests, each fake
// reset before every test, all stopped after.

import { afterAll, beforeAll, beforeEach } from 'bun:test'
import { type FakeProvider, type FakeUpstream, startFake } from '../fakes/upstream'
import { startTestGateway, type TestGateway } from './gateway'

export interface AllProviders {
  fakes: Record<FakeProvider, FakeUpstream>
  /** The running gateway (set once beforeAll has run). */
  gw: TestGateway
}

export function useAllProviders(onStart?: (s: AllProviders) => void): AllProviders {
  const s = { fakes: {} as Record<FakeProvider, FakeUpstream> } as AllProviders
  beforeAll(async () => {
    for (const p of ['openai', 'anthropic', 'google', 'mistral'] as const) s.fakes[p] = await startFake(p)
    s.gw = await startTestGateway(s.fakes)
    onStart?.(s)
  })
  afterAll(async () => {
    await s.gw.stop()
    for (const f of Object.values(s.fakes)) await f.stop()
  })
  beforeEach(() => {
    for (const f of Object.values(s.fakes)) f.reset()
  })
  return s
}
