// Dollar amounts as the dashboard prints them: fixed decimals scaled to the amount (never `2.0e-7`).

/** Most decimals ever printed: a millionth of a cent is below any price in the catalog. */
const MAX_DECIMALS = 12

/** Decimals that show an amount to two significant digits, and never fewer than cents. */
export function decimalsFor(usd: number): number {
  const abs = Math.abs(usd)
  if (abs === 0 || abs >= 0.01) return 2
  return Math.min(MAX_DECIMALS, Math.ceil(-Math.log10(abs)) + 1)
}

/** `$0.0000002`, `$0.0044`, `$12.50`; trailing zeros past the cents are dropped. */
export function fmtUsd(usd: number | null | undefined, decimals = decimalsFor(usd ?? 0)): string {
  if (usd == null) return '—'
  if (usd === 0) return '$0'
  const text = Math.abs(usd).toFixed(Math.min(MAX_DECIMALS, decimals))
  const [whole, frac = ''] = text.split('.') as [string, string?]
  const trimmed = frac.length > 2 ? frac.replace(/0+$/, '').padEnd(2, '0') : frac
  return `${usd < 0 ? '-' : ''}$${whole}${trimmed ? `.${trimmed}` : ''}`
}

/**
 * A budget's remainder at the precision of what was taken from it, so $0.0044 spent of $100 reads
 * `$99.9956`, not `$100.00`.
 */
export function fmtRemaining(remaining: number, ...taken: number[]): string {
  const decimals = Math.max(2, ...taken.filter((t) => t !== 0).map(decimalsFor))
  return fmtUsd(remaining, decimals)
}
