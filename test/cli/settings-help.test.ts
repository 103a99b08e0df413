// The settings table (src/settings.ts) as a user meets it: `gw serve --help` and `gw help` list every setting, and the README's table agrees with it.

import { expect, test } from 'bun:test'
import { join } from 'node:path'
import { CONFIG_FLAGS, KNOWN_SETTINGS, parseFlags } from '../../src/config'
import { type AnySetting, defaultText, flagOf, SETTINGS } from '../../src/settings'

const root = join(import.meta.dir, '../..')
const ALL = Object.values(SETTINGS) as AnySetting[]

function gwHelp(...args: string[]): string {
  const p = Bun.spawnSync([process.execPath, join(root, 'src/main.ts'), ...args], { env: { PATH: process.env.PATH ?? '' }, stdout: 'pipe', stderr: 'pipe' })
  expect(p.exitCode).toBe(0)
  return p.stdout.toString()
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

test('gw serve --help and gw help list every setting: its flag (or none), variable, help line and default', () => {
  expect(ALL.length).toBeGreaterThan(40)
  for (const help of [gwHelp('serve', '--help'), gwHelp('help')]) {
    for (const s of ALL) {
      const flag = flagOf(s)
      const usage = flag ? `--${flag} ${s.kind.secret ? '-' : 'VALUE'}` : '(no flag)'
      const entry = new RegExp(`^  ${escape(usage)} +${escape(s.env)}\\n {6}(.*)$`, 'm').exec(help)
      expect(`${s.env}: ${entry?.[1]}`).toBe(`${s.env}: ${s.help} [${s.kind.describe}; default: ${defaultText(s)}]`)
    }
    // No flag is listed that gw does not take, and none it takes is left out.
    expect(new Set([...help.matchAll(/^ {2}--([a-z-]+) /gm)].map((m) => m[1]))).toEqual(new Set(CONFIG_FLAGS))
  }
  // Each listed flag sets the variable listed beside it (secret ones take `-` and stdin, tested in admin-cli).
  for (const s of ALL) {
    const flag = flagOf(s)
    if (flag && !s.kind.secret) expect(parseFlags([`--${flag}`, 'v']).overrides).toEqual({ [s.env]: 'v' })
  }
})

/** The README's settings table: per row, the variables of its first cell and its default cell. */
async function readmeSettings(): Promise<{ names: string[]; defaults: string; pair: boolean }[]> {
  const readme = await Bun.file(join(root, 'README.md')).text()
  const section = readme.slice(readme.indexOf('\n## Configuration'), readme.indexOf('\n## ', readme.indexOf('\n## Configuration') + 1))
  return section
    .split('\n')
    .filter((l) => l.startsWith('| `'))
    .map((l) => {
      const [, vars = '', defaults = ''] = l.split('|').map((c) => c.trim())
      return { names: [...vars.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1] as string), defaults, pair: vars.includes(' / ') }
    })
}

test("the README's settings table names every setting with the default gw uses, and no GW_* variable gw does not read", async () => {
  const rows = await readmeSettings()
  const named = new Set(rows.flatMap((r) => r.names))
  for (const s of ALL) expect(`${s.env} in README: ${named.has(s.env)}`).toBe(`${s.env} in README: true`)
  for (const name of named) if (name.startsWith('GW_')) expect(`${name} known: ${KNOWN_SETTINGS.has(name)}`).toBe(`${name} known: true`)
  // A row of one variable, or of `A` / `B` with defaults `a` / `b`, states the default as --help does
  // (the README may add a note after it); a row of several variables sharing a meaning is not checked.
  let checked = 0
  for (const row of rows) {
    if (row.names.length > 1 && !row.pair) continue
    const parts = row.pair ? row.defaults.split(' / ') : [row.defaults]
    expect(parts.length).toBe(row.names.length)
    row.names.forEach((name, i) => {
      const s = ALL.find((e) => e.env === name)
      if (!s) return
      const said = (parts[i] as string).replaceAll('`', '')
      expect(`${name}: ${said.startsWith(defaultText(s))}`).toBe(`${name}: true`)
      checked++
    })
  }
  expect(checked).toBeGreaterThan(25)
})
