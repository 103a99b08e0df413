// The folders gw keeps data in (the SQLite database's, the log spool): created readable by their owner only,
// and a start-up warning for an existing one other users can open (gw never changes a folder it did not make).

import { existsSync, mkdirSync, statSync } from 'node:fs'
import { resolve } from 'node:path'

/** Creates `path` and any missing parent 0700 (PRODUCT §4: prompts, answers and encrypted keys live there). */
export function makePrivateFolder(path: string): void {
  mkdirSync(path, { recursive: true, mode: 0o700 })
}

/** One line naming the existing folders among `paths` that users other than the owner can open; undefined when none. */
export function openFoldersWarning(paths: readonly string[]): string | undefined {
  const open: string[] = []
  for (const path of new Set(paths.map((p) => resolve(p)))) {
    if (!existsSync(path)) continue
    const mode = statSync(path).mode & 0o777
    if (mode & 0o077) open.push(`${path} (${mode.toString(8).padStart(3, '0')})`)
  }
  if (!open.length) return undefined
  return `other users can open ${open.join(' and ')}: gw's files in it are owner-only, but the folder gw creates itself is 0700 and gw leaves yours as it is; chmod 700 it`
}
