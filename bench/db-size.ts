// Database size per million log entries, with bodies and without (bun bench/db-size.ts [N]).

import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { seed } from './log-store'

const n = Number(process.argv[2] ?? 1_000_000)
const dir = mkdtempSync(join(tmpdir(), 'gw-db-size-'))
const size = (p: string) => (existsSync(p) ? statSync(p).size : 0)
try {
  for (const bodies of [true, false]) {
    const path = join(dir, `gw-${bodies}.db`)
    const t0 = performance.now()
    await seed(path, n, `gw_sk_${'x'.repeat(44)}`, bodies)
    const bytes = size(path) + size(`${path}-wal`)
    const perMillion = (bytes / n) * 1e6
    console.log(
      `bodies ${bodies ? 'on ' : 'off'}: ${n.toLocaleString()} entries → ${(bytes / 1e6).toFixed(1)} MB ` +
        `(${(perMillion / 1e9).toFixed(2)} GB per million, ${Math.round(bytes / n)} bytes per entry; seeded in ${((performance.now() - t0) / 1000).toFixed(1)} s)`,
    )
    rmSync(path, { force: true })
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}
