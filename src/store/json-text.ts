// The JSON text a logged body was parsed from or serialised to, when gw has it already: the log
// writer stores that text instead of serialising the value again (the log entry's cost: docs/benchmarks.md).

const texts = new WeakMap<object, string>()

/** Notes that `value` is `text` as JSON; returns `value`. Primitives are not noted (they are cheap). */
export function withJsonText<T>(value: T, text: string): T {
  if (typeof value === 'object' && value !== null) texts.set(value, text)
  return value
}

/** `value` as JSON text: the noted text when there is one, else JSON.stringify. */
export function jsonText(value: unknown): string {
  return (typeof value === 'object' && value !== null && texts.get(value)) || JSON.stringify(value)
}

const entryTexts = new WeakMap<object, string>()

/** Notes that `entry`, without its bodies, is `text` as JSON (the log thread has it as it was handed over); returns `entry`. */
export function withEntryText<T extends object>(entry: T, text: string): T {
  entryTexts.set(entry, text)
  return entry
}

/** The entry without its bodies as JSON text: the noted text when there is one, else `serialise()`. */
export function entryText(entry: object, serialise: () => string): string {
  return entryTexts.get(entry) ?? serialise()
}
