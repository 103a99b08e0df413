// A small argv reader for the `gw` subcommands: positionals plus `--flag value` / `--flag=value` / `--switch`.

import { readFileSync } from 'node:fs'

export interface Args {
  positionals: string[]
  flags: Map<string, string | true>
}

export function parseArgs(argv: readonly string[], switches: readonly string[] = []): Args {
  const positionals: string[] = []
  const flags = new Map<string, string | true>()
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string
    const m = /^--([a-z][a-z0-9-]*)(?:=(.*))?$/.exec(a)
    if (!m) {
      positionals.push(a)
      continue
    }
    const name = m[1] as string
    if (m[2] !== undefined) flags.set(name, m[2])
    else if (switches.includes(name)) flags.set(name, true)
    else {
      const v = argv[i + 1]
      if (v === undefined || v.startsWith('--')) throw new Error(`--${name} needs a value`)
      flags.set(name, v)
      i++
    }
  }
  return { positionals, flags }
}

export function flag(args: Args, name: string): string | undefined {
  const v = args.flags.get(name)
  return typeof v === 'string' ? v : undefined
}

export function requireFlag(args: Args, name: string): string {
  const v = flag(args, name)
  if (v === undefined) throw new Error(`--${name} is required`)
  return v
}

/**
 * A secret given to a flag: only `-`, meaning "read it from stdin" (its first line), is accepted,
 * because a value on the command line is visible to every local user in `ps` (docs/security.md).
 */
export function secretArg(name: string, value: string, instead: string): string {
  if (value !== '-')
    throw new Error(`--${name} takes no value on the command line (other users see it in \`ps\`): pass "--${name} -" and the value on stdin, or ${instead}`)
  const line = readFileSync(0, 'utf8').split(/\r?\n/)[0]?.trim() ?? ''
  if (!line) throw new Error(`--${name} -: nothing was read from stdin`)
  return line
}

/** How a user runs gw's commands here: `gw` (the binary), or from a source checkout `npx bun src/main.ts` (no global Bun: README). */
export const GW_COMMAND = /(^|[/\\])bun(\.exe)?$/.test(process.execPath) ? 'npx bun src/main.ts' : 'gw'
