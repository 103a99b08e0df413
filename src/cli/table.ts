// Renders a CLI answer as text tables: a `{data: [...]}` listing as rows, an object as field/value lines.

type Row = Record<string, unknown>

const isRow = (v: unknown): v is Row => typeof v === 'object' && v !== null && !Array.isArray(v)

function cell(v: unknown): string {
  if (v === null || v === undefined || v === '') return '-'
  if (typeof v === 'string') return v
  if (typeof v === 'number' || typeof v === 'boolean') return String(v)
  if (Array.isArray(v) && v.every((x) => typeof x !== 'object')) return v.length ? v.join(', ') : '-'
  return JSON.stringify(v)
}

function grid(rows: Row[]): string {
  if (rows.length === 0) return '(none)'
  const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))]
  const cells = rows.map((r) => columns.map((c) => cell(r[c])))
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => (row[i] as string).length)))
  const line = (xs: string[]) => xs.map((x, i) => x.padEnd(widths[i] as number)).join('  ').trimEnd()
  return [line(columns.map((c) => c.toUpperCase())), ...cells.map(line)].join('\n')
}

export function formatTable(out: unknown): string {
  if (!isRow(out)) return cell(out)
  if (Array.isArray(out.data) && out.data.every(isRow)) return grid(out.data)
  // An object: its plain fields as name/value lines, then each list of records as its own table.
  const plain: string[] = []
  const lists: string[] = []
  const width = Math.max(...Object.keys(out).map((k) => k.length))
  for (const [k, v] of Object.entries(out)) {
    if (Array.isArray(v) && v.length > 0 && v.every(isRow)) lists.push(`\n${k}:\n${grid(v)}`)
    else if (isRow(v) && Object.values(v).every((x) => typeof x !== 'object' || x === null || Array.isArray(x)) && Object.keys(v).length)
      lists.push(`\n${k}:\n${formatTable(v)}`)
    else plain.push(`${k.padEnd(width)}  ${cell(v)}`)
  }
  return [...plain, ...lists].join('\n')
}
