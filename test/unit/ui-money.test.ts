// The dashboard's dollar amounts: fixed decimals scaled to the amount, a budget's remainder at the precision of what was spent.

import { expect, test } from 'bun:test'
import { fmtRemaining, fmtUsd } from '../../src/ui/money'

test('small costs print in fixed decimals, never in exponent notation', () => {
  expect(fmtUsd(2e-7)).toBe('$0.0000002')
  expect(fmtUsd(0.0044)).toBe('$0.0044')
  expect(fmtUsd(0.000_012_345)).toBe('$0.000012')
  expect(fmtUsd(0.005)).toBe('$0.005')
  expect(fmtUsd(1e-13)).toBe('$0.00')
  for (const usd of [2e-7, 3.5e-9, 1e-6, 0.00123]) expect(fmtUsd(usd)).not.toContain('e')
})

test('amounts from a cent up keep cents; none and zero are plain', () => {
  expect(fmtUsd(12.5)).toBe('$12.50')
  expect(fmtUsd(0.01)).toBe('$0.01')
  expect(fmtUsd(1234.567)).toBe('$1234.57')
  expect(fmtUsd(0)).toBe('$0')
  expect(fmtUsd(null)).toBe('—')
  expect(fmtUsd(-0.0044)).toBe('-$0.0044')
})

test('a remainder shows what was taken from the budget', () => {
  expect(fmtRemaining(100 - 0.0044, 0.0044, 0)).toBe('$99.9956')
  expect(fmtRemaining(100 - 0.0044 - 0.00002, 0.0044, 0.00002)).toBe('$99.99558')
  expect(fmtRemaining(90, 10, 0)).toBe('$90.00')
  expect(fmtRemaining(100, 0, 0)).toBe('$100.00')
})
