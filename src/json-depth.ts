// How deep a parsed JSON value nests, found without recursion: request bodies and upstream answers are
// refused past their depth limits (docs/security.md) before any code that recurses (JSON.stringify) meets them.

/** Does `value` nest arrays/objects more than `max` levels deep? */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 0]]
  for (let next = stack.pop(); next; next = stack.pop()) {
    const [v, depth] = next
    if (typeof v !== 'object' || v === null) continue
    if (depth >= max) return true
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth + 1])
  }
  return false
}

/** `text` parsed as JSON, or a thrown Error when it is not JSON or nests more than `max` levels (a text nests at most half its length). */
export function parseJsonWithin(text: string, max: number): unknown {
  const value = JSON.parse(text)
  if (text.length > 2 * max && nestsDeeperThan(value, max)) throw new Error(`it nests arrays/objects more than ${max} levels deep`)
  return value
}
