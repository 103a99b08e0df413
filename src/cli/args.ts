// A small argv reader for the `gw` subcommands: positionals plus `--flag value` / `--flag=value` / `--switch`.

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
