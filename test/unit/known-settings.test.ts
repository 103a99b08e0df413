// The GW_* settings list the misspelling warning compares against holds every variable src/config.ts and src/settings.ts read.

import { expect, test } from 'bun:test'
import { join } from 'node:path'
import { KNOWN_SETTINGS, misspeltSettings } from '../../src/config'

test('every GW_* name src/config.ts and src/settings.ts read is a known setting, so none is ever reported as a misspelling', async () => {
  const files = ['../../src/config.ts', '../../src/settings.ts'].map((f) => Bun.file(join(import.meta.dir, f)).text())
  const source = (await Promise.all(files)).join('\n')
  const read = new Set([...source.matchAll(/'(GW_[A-Z_]+)'/g)].map((m) => m[1] as string))
  expect(read.size).toBeGreaterThan(30)
  for (const name of read) expect(`${name} ${KNOWN_SETTINGS.has(name)}`).toBe(`${name} true`)
  expect(misspeltSettings(Object.fromEntries([...read].map((n) => [n, 'x'])))).toEqual([])
})

test('a name a few edits from a setting names it; a far one (a client script’s GW_KEY) is left alone', () => {
  expect(misspeltSettings({ GW_PROT: '1', GW_DATABSE_URL: 'x', GW_KEY: 'k', HOME: '/root' })).toEqual([
    'GW_PROT is not a gw setting and is ignored: did you mean GW_PORT?',
    'GW_DATABSE_URL is not a gw setting and is ignored: did you mean GW_DATABASE_URL?',
  ])
})
