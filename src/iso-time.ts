// ISO 8601 UTC timestamps (`2026-11-23T23:20:44.123Z`) from epoch milliseconds, as Date#toISOString
// gives them, with the calendar part worked out once per second: every request's log entry needs one.

let second = Number.NaN
let prefix = ''

export function isoTime(ms: number): string {
  const s = Math.floor(ms / 1000)
  if (s !== second) {
    const iso = new Date(s * 1000).toISOString()
    // Years past 9999 and before 0 have a longer form: leave those to Date itself.
    if (iso.length !== 24) return new Date(ms).toISOString()
    second = s
    prefix = iso.slice(0, 20)
  }
  const milli = ms - s * 1000
  return `${prefix}${milli < 10 ? '00' : milli < 100 ? '0' : ''}${Math.floor(milli)}Z`
}
