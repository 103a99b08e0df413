// The personal data and secrets a `pii` guardrail finds (PRODUCT §19), each by a precise rule: a card
// number passes Luhn and has an issuer's prefix and length, an IBAN its country's length and check
// digits (mod 97), an SSN the ranges the SSA issues; never "any 16 digits" (docs/policy.md, "Guardrails").

export const PII_ENTITIES = ['email', 'phone', 'credit_card', 'iban', 'us_ssn', 'ip_address', 'secret'] as const
export type PiiEntity = (typeof PII_ENTITIES)[number]

/** One value found in a text: [start, end) in UTF-16 code units. */
export interface Found {
  entity: PiiEntity
  start: number
  end: number
}

/**
 * The longest value any rule finds, private key blocks apart (those are found whole between their
 * BEGIN and END lines): a stream's text is held back this much while an output guardrail reads it.
 */
export const MAX_ENTITY_CHARS = 256

// Every quantifier is bounded, so each regex does bounded work per start position: linear in the text.
// An email is found from its `@`: the local part is the run of its characters before it, the domain is matched after it.
const EMAIL_DOMAIN = /(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.){1,8}[A-Za-z]{2,24}(?![\w-]|\.[A-Za-z0-9])/y
const LOCAL_PART = /[A-Za-z0-9._%+-]/
// International (+ and 8–15 digits, optional single separators) or North American with separators.
const PHONE_INTL = /(?<![\w+])\+\d{1,3}(?:[ .-]?(?:\(\d{1,4}\)|\d{1,4})){2,6}(?![\w-]|[.-]\d)/g
const PHONE_NANP = /(?<![\w+-])(?:\([2-9]\d{2}\)[ .-]?|[2-9]\d{2}[ .-])[2-9]\d{2}[ .-]\d{4}(?![\w-]|[.-]\d)/g
const CARD = /(?<![\w-])\d(?:[ -]?\d){12,18}(?!\w)/g
const IBAN = /(?<![\w])[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}(?!\w)/g
const SSN = /(?<![\w-])(\d{3})-(\d{2})-(\d{4})(?![\w-])/g
const IPV4 = /(?<![\w.])\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}(?![\w]|\.\d)/g
/** Four octets of 0–255 without leading zeros. */
const octets = (s: string) => s.split('.').every((o) => (o.length === 1 || o[0] !== '0') && Number(o) <= 255)
// A run of hex digits, colons and dots with two colons at least; checked by ipv6() below.
const IPV6 = /(?<![\w:.])[0-9A-Fa-f:.]{2,45}(?![\w:.])/g
const SECRETS = [
  /(?<![\w-])sk-(?:proj-|ant-(?:api\d\d-)?|svcacct-)?[A-Za-z0-9_-]{20,200}(?![\w-])/g,
  /(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9])/g,
  /(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{36,251}(?![A-Za-z0-9_])/g,
  /(?<![A-Za-z0-9-])xox[abposr]-[A-Za-z0-9-]{10,200}(?![A-Za-z0-9-])/g,
]
const KEY_BEGIN = /-----BEGIN ((?:[A-Z0-9]+ ){0,3})PRIVATE KEY-----/g

/** Card issuers' prefixes and lengths (Visa, Mastercard, Amex, Discover, JCB, Diners, UnionPay). */
function issuerLength(d: string): boolean {
  const n = d.length
  const p2 = Number(d.slice(0, 2))
  const p4 = Number(d.slice(0, 4))
  const p3 = Number(d.slice(0, 3))
  if (d[0] === '4') return n === 13 || n === 16 || n === 19
  if ((p2 >= 51 && p2 <= 55) || (p4 >= 2221 && p4 <= 2720)) return n === 16
  if (p2 === 34 || p2 === 37) return n === 15
  if (p4 === 6011 || p2 === 65 || (p3 >= 644 && p3 <= 649)) return n >= 16 && n <= 19
  if (p4 >= 3528 && p4 <= 3589) return n >= 16 && n <= 19
  if (p2 === 36 || p2 === 38 || p2 === 39 || (p3 >= 300 && p3 <= 305)) return n >= 14 && n <= 19
  if (p2 === 62) return n >= 16 && n <= 19
  return false
}

export function luhn(digits: string): boolean {
  let sum = 0
  for (let i = digits.length - 1, double = false; i >= 0; i--, double = !double) {
    let v = digits.charCodeAt(i) - 48
    if (double && (v *= 2) > 9) v -= 9
    sum += v
  }
  return sum % 10 === 0
}

/** IBAN lengths by country (ISO 13616 registry). */
const IBAN_LENGTHS: Record<string, number> = {
  AD: 24, AE: 23, AL: 28, AT: 20, AZ: 28, BA: 20, BE: 16, BG: 22, BH: 22, BR: 29, BY: 28, CH: 21, CR: 22, CY: 28,
  CZ: 24, DE: 22, DK: 18, DO: 28, EE: 20, EG: 29, ES: 24, FI: 18, FO: 18, FR: 27, GB: 22, GE: 22, GI: 23, GL: 18,
  GR: 27, GT: 28, HR: 21, HU: 28, IE: 22, IL: 23, IQ: 23, IS: 26, IT: 27, JO: 30, KW: 30, KZ: 20, LB: 28, LC: 32,
  LI: 21, LT: 20, LU: 20, LV: 21, MC: 27, MD: 24, ME: 22, MK: 19, MR: 27, MT: 31, MU: 30, NL: 18, NO: 15, PK: 24,
  PL: 28, PS: 29, PT: 25, QA: 29, RO: 24, RS: 22, SA: 24, SC: 31, SE: 24, SI: 19, SK: 24, SM: 27, ST: 25, SV: 28,
  TL: 23, TN: 24, TR: 26, UA: 29, VA: 22, VG: 24, XK: 20,
}

/** Country length and ISO 7064 mod 97-10 check digits. */
export function ibanValid(compact: string): boolean {
  if (IBAN_LENGTHS[compact.slice(0, 2)] !== compact.length) return false
  const moved = compact.slice(4) + compact.slice(0, 4)
  let rest = 0
  for (let i = 0; i < moved.length; i++) {
    const c = moved.charCodeAt(i)
    const v = c >= 65 ? c - 55 : c - 48
    rest = v >= 10 ? (rest * 100 + v) % 97 : (rest * 10 + v) % 97
  }
  return rest === 1
}

/** An IPv6 address in any of RFC 4291's text forms (one `::` at most, an IPv4 tail allowed). */
function ipv6(s: string): boolean {
  if (!s.includes(':') || s.indexOf(':') === s.lastIndexOf(':')) return false
  const halves = s.split('::')
  if (halves.length > 2) return false
  let groups = 0
  for (let h = 0; h < halves.length; h++) {
    const half = halves[h] as string
    if (half === '') continue
    const parts = half.split(':')
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i] as string
      const last = h === halves.length - 1 && i === parts.length - 1
      if (last && p.includes('.')) {
        if (!/^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(p) || !octets(p)) return false
        groups += 2
      } else if (!/^[0-9A-Fa-f]{1,4}$/.test(p)) return false
      else groups++
    }
  }
  // `::` alone (the unspecified address) is left alone: it is far more often C++ or a separator.
  return halves.length === 2 ? groups >= 1 && groups <= 7 : groups === 8
}

/**
 * Each match of `re` that `keep` accepts. A match it refuses may hold a value followed by more of the
 * same characters (a card number, then an expiry's digits): its prefixes that end before a separator
 * are tried, longest first (`shrink`).
 */
function each(re: RegExp, text: string, entity: PiiEntity, out: Found[], keep: (s: string) => boolean = () => true, shrink = false): void {
  re.lastIndex = 0
  for (let m = re.exec(text); m; m = re.exec(text)) {
    let s = m[0]
    if (!keep(s)) {
      s = ''
      if (shrink)
        for (let p = m[0].length - 1; p > 0; p--)
          if (SEPARATORS.includes(m[0][p] as string) && keep(m[0].slice(0, p))) {
            s = m[0].slice(0, p)
            break
          }
      if (!s) {
        re.lastIndex = m.index + 1
        continue
      }
    }
    out.push({ entity, start: m.index, end: m.index + s.length })
    re.lastIndex = m.index + s.length
  }
}

const SEPARATORS = ' .-'

const digitsOf = (s: string) => s.replace(/[^0-9]/g, '')

/** Every value of the wanted kinds in `text`, in order, never two overlapping (the earliest, then the longest, wins). */
export function findEntities(text: string, wanted: ReadonlySet<PiiEntity>): Found[] {
  const all: Found[] = []
  if (wanted.has('email')) emails(text, all)
  if (wanted.has('secret')) {
    for (const re of SECRETS) each(re, text, 'secret', all)
    if (text.includes('PRIVATE KEY-----')) privateKeys(text, all)
  }
  if (wanted.has('iban')) each(IBAN, text, 'iban', all, (s) => !s.endsWith(' ') && ibanValid(s.replace(/ /g, '')), true)
  if (wanted.has('credit_card'))
    each(CARD, text, 'credit_card', all, (s) => {
      const d = digitsOf(s)
      // One kind of separator, as card numbers are written (`4111 1111 …`, `4111-1111-…`).
      return new Set(s.replace(/\d/g, '')).size <= 1 && issuerLength(d) && luhn(d)
    }, true)
  if (wanted.has('us_ssn'))
    each(SSN, text, 'us_ssn', all, (s) => {
      const [area, group, serial] = s.split('-') as [string, string, string]
      return area !== '000' && area !== '666' && area[0] !== '9' && group !== '00' && serial !== '0000'
    })
  if (wanted.has('phone')) {
    each(PHONE_INTL, text, 'phone', all, (s) => {
      const n = digitsOf(s).length
      return n >= 8 && n <= 15
    }, true)
    each(PHONE_NANP, text, 'phone', all)
  }
  if (wanted.has('ip_address')) {
    each(IPV4, text, 'ip_address', all, octets)
    if (text.includes('::') || /[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}:/.test(text)) each(IPV6, text, 'ip_address', all, ipv6)
  }
  if (all.length < 2) return all
  return resolve(text, all)
}

/** Non-overlapping values in order: the earliest, then the longest, wins. */
function greedy(found: Found[]): Found[] {
  found.sort((a, b) => a.start - b.start || b.end - a.end)
  const out: Found[] = []
  let until = -1
  for (const f of found)
    if (f.start >= until) {
      out.push(f)
      until = f.end
    }
  return out
}

/**
 * Overlapping values: a phone number, the loosest rule, gives way to any other kind (a card number
 * after a phone number is read as a card, the phone cut before it); the others by `greedy`.
 */
function resolve(text: string, all: Found[]): Found[] {
  const strong = greedy(all.filter((f) => f.entity !== 'phone'))
  const phones = greedy(all.filter((f) => f.entity === 'phone'))
  if (!phones.length || !strong.length) return phones.length ? phones : strong
  const kept: Found[] = []
  let j = 0
  for (const p of phones) {
    while (j < strong.length && (strong[j] as Found).end <= p.start) j++
    const next = strong[j]
    if (!next || next.start >= p.end) kept.push(p)
    else if (next.start > p.start) {
      // Cut before the other value, at a separator, if enough digits remain.
      let end = next.start
      while (end > p.start && !/\d/.test(text[end - 1] as string)) end--
      const digits = digitsOf(text.slice(p.start, end)).length
      if (digits >= 8 && digits <= 15 && end < next.start) kept.push({ ...p, end })
    }
  }
  return [...strong, ...kept].sort((a, b) => a.start - b.start)
}

/** Emails, from each `@`: at most 64 local-part characters before it (a longer run is no address), at most 254 in all. */
function emails(text: string, out: Found[]): void {
  for (let at = text.indexOf('@'); at >= 0; at = text.indexOf('@', at + 1)) {
    let start = at
    while (start > 0 && at - start <= 64 && LOCAL_PART.test(text[start - 1] as string)) start--
    if (start === at || at - start > 64) continue
    EMAIL_DOMAIN.lastIndex = at + 1
    const m = EMAIL_DOMAIN.exec(text)
    if (!m || EMAIL_DOMAIN.lastIndex - start > 254) continue
    out.push({ entity: 'email', start, end: EMAIL_DOMAIN.lastIndex })
    at = EMAIL_DOMAIN.lastIndex - 1
  }
}

/** PEM private key blocks, BEGIN line to its END line (at most 16 KiB). */
function privateKeys(text: string, out: Found[]): void {
  KEY_BEGIN.lastIndex = 0
  // A block ends at the first END line after its BEGIN; that line is found once for every BEGIN before it
  // (the search only moves forward), so a text of BEGIN lines without END costs one pass, not one per line.
  let end = -1
  for (let m = KEY_BEGIN.exec(text); m; m = KEY_BEGIN.exec(text)) {
    const from = m.index + m[0].length
    if (end < from) end = text.indexOf('-----END ', from)
    if (end < 0) return
    const endLine = `-----END ${m[1] ?? ''}PRIVATE KEY-----`
    if (end - m.index > 16_384 || !text.startsWith(endLine, end)) continue
    out.push({ entity: 'secret', start: m.index, end: end + endLine.length })
    KEY_BEGIN.lastIndex = end + endLine.length
  }
}

/** Where an unfinished private key block starts in `text` (its END line not yet seen), or -1. */
export function openKeyBlock(text: string): number {
  const at = text.lastIndexOf('-----BEGIN ')
  if (at < 0 || text.length - at > 16_384) return -1
  return text.indexOf('-----END ', at) < 0 ? at : -1
}
