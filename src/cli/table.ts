// Plain-text tables for the CLI: columns padded to their widest cell, numbers aligned right; any
// command's answer as tables (a `{data: [...]}` listing as rows, a record as field/value lines).

export function formatTable(header: string[], rows: (string | number | null)[][]): string {
  const cells = rows.map((r) => r.map((c) => (c === null ? '-' : String(c))))
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((r) => (r[i] ?? '').length)))
  const numeric = header.map((_, i) => rows.length > 0 && rows.every((r) => r[i] === null || typeof r[i] === 'number'))
  const line = (r: string[]) =>
    r.map((c, i) => (numeric[i] ? c.padStart(widths[i] as number) : c.padEnd(widths[i] as number))).join('  ').trimEnd()
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n')
}

type Row = Record<string, unknown>

const isRow = (v: unknown): v is Row => typeof v === 'object' && v !== null && !Array.isArray(v)

function cell(v: unknown): string | number | null {
  if (v === null || v === undefined || v === '') return null
  if (typeof v === 'string' || typeof v === 'number') return v
  if (typeof v === 'boolean') return String(v)
  if (Array.isArray(v) && v.every((x) => typeof x !== 'object')) return v.length ? v.join(', ') : null
  return JSON.stringify(v)
}

function grid(rows: Row[]): string {
  if (rows.length === 0) return '(none)'
  const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))]
  return formatTable(columns, rows.map((r) => columns.map((c) => cell(r[c]))))
}

export function formatOutput(out: unknown): string {
  if (typeof out === 'string') return out
  if (!isRow(out)) return String(cell(out) ?? '-')
  if (Array.isArray(out.data) && out.data.every(isRow)) return grid(out.data)
  // A record: its plain fields as name/value lines, then each list of records (or small object) as its own table.
  const plain: string[] = []
  const lists: string[] = []
  const width = Math.max(...Object.keys(out).map((k) => k.length))
  for (const [k, v] of Object.entries(out)) {
    if (Array.isArray(v) && v.length > 0 && v.every(isRow)) lists.push(`\n${k}:\n${grid(v)}`)
    else if (isRow(v) && Object.keys(v).length && Object.values(v).every((x) => !isRow(x))) lists.push(`\n${k}:\n${formatOutput(v)}`)
    else plain.push(`${k.padEnd(width)}  ${cell(v) ?? '-'}`)
  }
  return [...plain, ...lists].join('\n')
}
