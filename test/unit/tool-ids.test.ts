// Tool-call id schemes: stable replacements, and Gemini thought signatures carried in ids.

import { expect, test } from 'bun:test'
import { fitToolId, geminiToolId, thoughtSignatureOf } from '../../src/providers/tool-ids'

test('a thought signature survives the trip through a tool-call id', () => {
  // Standard base64 with '+', '/' and padding, as Gemini sends it.
  const sig = Buffer.from([0xfb, 0xff, 0xbf, 0x3e, 0x00, 0x12, 0x34]).toString('base64')
  expect(sig).toMatch(/[+/].*=$/)
  const id = geminiToolId(sig)
  expect(id).toMatch(/^call_[A-Za-z0-9]{8}_ts_[A-Za-z0-9_-]+$/)
  expect(thoughtSignatureOf(id)).toBe(sig)
  expect(thoughtSignatureOf(geminiToolId(undefined))).toBeUndefined()
  expect(thoughtSignatureOf('call_abc')).toBeUndefined()
  expect(geminiToolId(undefined)).not.toBe(geminiToolId(undefined))
})

test('ids a provider refuses are replaced by the same stand-in every time', () => {
  const long = 'x'.repeat(100)
  expect(fitToolId('call_ok', 40, /^\S+$/)).toBe('call_ok')
  expect(fitToolId(long, 40, /^\S+$/)).toBe(fitToolId(long, 40, /^\S+$/))
  expect(fitToolId(long, 40, /^\S+$/).length).toBeLessThanOrEqual(40)
  expect(fitToolId('a.b', 64, /^[a-zA-Z0-9_-]+$/)).toMatch(/^call_[a-zA-Z0-9]+$/)
  expect(fitToolId('a.b', 64, /^[a-zA-Z0-9_-]+$/)).not.toBe(fitToolId('a.c', 64, /^[a-zA-Z0-9_-]+$/))
})
