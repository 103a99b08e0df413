// isoTime: the same text as Date#toISOString for any epoch millisecond, across seconds and years.

import { expect, test } from 'bun:test'
import { isoTime } from '../../src/iso-time'

test('isoTime gives what Date#toISOString gives', () => {
  const samples = [0, 1, 999, 1000, 1001, 86_399_999, Date.now(), Date.UTC(2026, 11, 31, 23, 59, 59, 999), Date.UTC(2027, 0, 1), -1, -1001, 253_402_300_799_999, 253_402_300_800_000]
  for (let i = 0; i < 2000; i++) samples.push(Math.floor(Math.random() * 4_102_444_800_000))
  // Neighbouring milliseconds share a second: the cached part must not leak into the next one.
  const t = Date.now()
  for (let i = -1500; i < 1500; i += 7) samples.push(t + i)
  for (const ms of samples) expect(isoTime(ms)).toBe(new Date(ms).toISOString())
})
