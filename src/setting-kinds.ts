// The kinds of value a setting holds (src/settings.ts): how a variable's text is read and checked, and how --help names it.

/** Reads one kind of setting value. */
export interface Kind<T> {
  /** What the value must be, for --help ("an integer from 0 to 65535"). */
  readonly describe: string
  /** A flag of this kind takes only `-` and reads the value from stdin (never from argv, which `ps` shows). */
  readonly secret?: true
  /**
   * The value of `name` set to `raw` (never empty: an empty variable is unset), or undefined when it is
   * invalid; each thing wrong with it is pushed to `problems`, as a whole line naming the variable.
   */
  read(raw: string, name: string, problems: string[]): T | undefined
}

/** A check of a text value: what is wrong with it, as lines after the variable's name ("must be …"). */
type TextCheck = (value: string) => string[]

export const text = (describe = 'text', check: TextCheck = () => []): Kind<string> => ({
  describe,
  read(raw, name, problems) {
    for (const p of check(raw)) problems.push(`${name} ${p}`)
    return raw
  },
})

/** A password or key: as `text`, but its flag (if any) reads it from stdin. */
export const secret = (describe: string, check: TextCheck): Kind<string> => ({ ...text(describe, check), secret: true })

const numberKind = (min: number, max: number, whole: boolean): Kind<number> => {
  const what = whole ? 'an integer' : 'a number'
  return {
    describe: `${what} from ${min} to ${max}`,
    read(raw, name, problems) {
      const n = Number(raw)
      if ((whole ? Number.isInteger(n) : Number.isFinite(n)) && n >= min && n <= max) return n
      problems.push(`${name} must be ${what} from ${min} to ${max}, got "${raw}"`)
      return undefined
    },
  }
}
export const int = (min: number, max: number): Kind<number> => numberKind(min, max, true)
export const num = (min: number, max: number): Kind<number> => numberKind(min, max, false)

export const bool = (): Kind<boolean> => ({
  describe: 'true or false',
  read(raw, name, problems) {
    if (/^(1|true|yes|on)$/i.test(raw)) return true
    if (/^(0|false|no|off)$/i.test(raw)) return false
    problems.push(`${name} must be true or false, got "${raw}"`)
    return undefined
  },
})

/** An http(s) URL, kept without trailing slashes. */
export const httpUrl = (): Kind<string> => ({
  describe: 'an http(s) URL',
  read(raw, name, problems) {
    const v = raw.replace(/\/+$/, '')
    if (!/^https?:\/\/[^/]/.test(v)) problems.push(`${name} must be an http(s) URL, got "${v}"`)
    return v
  },
})

/** One of a few words, case-insensitive. */
export const oneOf = <T extends string>(values: readonly T[]): Kind<T> => ({
  describe: values.join(' | '),
  read(raw, name, problems) {
    const v = raw.toLowerCase()
    if ((values as readonly string[]).includes(v)) return v as T
    problems.push(`${name} must be one of ${values.join(', ')}, got "${v}"`)
    return undefined
  },
})

/** Comma-separated entries, each trimmed (then `normalise`d); `check` says what is wrong with one, as a whole line. */
export const list = (
  describe: string,
  opts: { normalise?: (entry: string) => string; check?: (entry: string) => string | undefined } = {},
): Kind<readonly string[]> => ({
  describe,
  read(raw, _name, problems) {
    const entries = raw
      .split(',')
      .map((e) => (opts.normalise ?? String)(e.trim()))
      .filter(Boolean)
    for (const e of entries) {
      const problem = opts.check?.(e)
      if (problem) problems.push(problem)
    }
    return entries
  },
})

/** A value read by a function that never refuses one (e.g. as Bun itself reads its variables). */
export const readAs = <T>(describe: string, parse: (raw: string) => T): Kind<T> => ({ describe, read: (raw) => parse(raw) })
