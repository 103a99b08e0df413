// Guardrails (PRODUCT §19) without a server: each entity's rule and its look-alikes, masking and the
// streamed restore as properties (fast-check: any text, any entity mix, any chunking), and RE2's bounded work.

import { expect, test } from 'bun:test'
import fc from 'fast-check'
import { checkGuardrails, type Guardrail } from '../../src/guardrails/config'
import { findEntities, ibanValid, luhn, PII_ENTITIES, type PiiEntity } from '../../src/guardrails/entities'
import { Guard } from '../../src/guardrails/guard'
import { GuardedStream, HeldStream } from '../../src/guardrails/stream'
import { GatewayError } from '../../src/errors'
import type { StreamPart } from '../../src/providers/adapter'
import type { ChatRequest } from '../../src/providers/openai-types'

const ALL = new Set<PiiEntity>(PII_ENTITIES)
const found = (text: string, only: PiiEntity[] = [...PII_ENTITIES]) => findEntities(text, new Set(only)).map((f) => [f.entity, text.slice(f.start, f.end)])
/** The text without the values the rules find (each cut leaves a NUL, so no two pieces join into a new string). */
const outsideEntities = (text: string) => {
  let out = ''
  let from = 0
  for (const f of findEntities(text, new Set(PII_ENTITIES))) {
    out += `${text.slice(from, f.start)}\u0000`
    from = f.end
  }
  return out + text.slice(from)
}

/** Real-looking values of every kind, each valid by its rule. */
const VALUES: Record<PiiEntity, string[]> = {
  email: ['ada@example.com', 'j.doe+news@mail.example.co.uk', 'x_y@sub.domain.io'],
  phone: ['+44 20 7946 0958', '+1 (415) 555-2671', '(212) 555-0187', '415-555-2671', '+33612345678'],
  credit_card: ['4111 1111 1111 1111', '4111111111111111', '5555-5555-5555-4444', '378282246310005', '6011 1111 1111 1117'],
  iban: ['DE89 3704 0044 0532 0130 00', 'GB82WEST12345698765432', 'FR1420041010050500013M02606', 'NL91ABNA0417164300'],
  us_ssn: ['123-45-6789', '078-05-1120'],
  ip_address: ['192.168.1.20', '8.8.8.8', '2001:db8::8a2e:370:7334', '::1', 'fe80::1ff:fe23:4567:890a'],
  secret: [
    'sk-proj-abcdefghijklmnopqrstuvwxyz012345',
    'AKIAIOSFODNN7EXAMPLE',
    'ghp_0123456789abcdefghijklmnopqrstuvwxyzAB',
    '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1234\nabcdEFGH\n-----END RSA PRIVATE KEY-----',
  ],
}

test('each kind is found whole by its rule', () => {
  for (const [kind, values] of Object.entries(VALUES) as [PiiEntity, string[]][])
    for (const v of values) expect(found(`before ${v} after`)).toEqual([[kind, v]])
})

test('look-alikes are left alone: Luhn-invalid and issuer-less digits, IBAN check digits wrong, SSN ranges never issued, plain numbers', () => {
  const lookAlikes = [
    '4111 1111 1111 1112', // Luhn fails
    '1234 5678 9012 3456', // no issuer, Luhn fails
    '0000000000000000', // Luhn passes, no issuer
    'order 9999999999999995 shipped', // Luhn passes, no issuer
    'DE89 3704 0044 0532 0130 01', // check digits wrong
    'DE00370400440532013000',
    'XX89370400440532013000', // no such country
    'GB82WEST1234569876543', // one short for GB
    '000-12-3456', // SSN area 000
    '666-12-3456',
    '900-12-3456',
    '123-00-4567',
    '123-45-0000',
    'call 5551234567 now', // 10 bare digits: not a phone
    '2024-01-15', // a date
    'version 1.2.3',
    '256.1.1.1',
    'the ratio 10:30:45',
    'std::vector and a::b::c',
    'not-an-email@localhost',
    'sk-short',
    'AKIA1234',
  ]
  for (const t of lookAlikes) expect({ t, found: found(t) }).toEqual({ t, found: [] })
  expect(luhn('4111111111111111')).toBe(true)
  expect(ibanValid('DE89370400440532013000')).toBe(true)
  expect(ibanValid('DE89370400440532013001')).toBe(false)
})

test('a card in a longer run of digits is found at its group boundary, and only the kinds asked for are found', () => {
  expect(found('card 4111 1111 1111 1111 exp 12/27')).toEqual([['credit_card', '4111 1111 1111 1111']])
  expect(found('mail ada@example.com from 8.8.8.8', ['ip_address'])).toEqual([['ip_address', '8.8.8.8']])
})

// ---- properties

const filler = fc.stringMatching(/^[a-z0-9 ,.:@+()!?\n-]{0,12}$/)
const entityValue = fc.constantFrom(...(Object.values(VALUES).flat() as string[]))
/** Texts that hold a value or not, a literal placeholder-looking string or not, between ordinary words. */
const textWithEntities = fc
  .array(fc.oneof({ weight: 3, arbitrary: filler }, { weight: 3, arbitrary: entityValue }, { weight: 1, arbitrary: fc.constantFrom('[EMAIL_1]', '[PHONE_', '[', ']') }), {
    maxLength: 12,
  })
  .map((parts) => parts.join(' '))
/** Cut points for a text: the chunks a stream delivers it in. */
const cuts = fc.array(fc.nat(), { maxLength: 20 })

function chunked(text: string, at: number[]): string[] {
  const points = [...new Set(at.map((n) => (text.length ? n % (text.length + 1) : 0)))].sort((a, b) => a - b)
  const out: string[] = []
  let from = 0
  for (const p of points) {
    out.push(text.slice(from, p))
    from = p
  }
  out.push(text.slice(from))
  return out
}

const maskAll: Guardrail[] = [{ name: 'pii', kind: 'pii', on: 'input', action: 'mask', entities: [...PII_ENTITIES] }]
const body = (content: string): ChatRequest => ({ model: 'm', messages: [{ role: 'user', content }] }) as ChatRequest
const noFetch = (() => Promise.reject(new Error('no webhook here'))) as unknown as typeof fetch

/** An echoing model's stream: the masked text split at the cut points, through the guarded stream. */
function streamed(g: Guard, text: string, at: number[]): string {
  const s = new GuardedStream(g)
  let client = ''
  const take = (parts: StreamPart[] | null) => {
    for (const p of parts ?? []) if (p.type === 'choices') for (const c of p.choices) client += c.delta.content ?? ''
  }
  const pieces = chunked(text, at)
  pieces.forEach((piece, i) => {
    const last = i === pieces.length - 1
    take(s.transform([{ type: 'choices', choices: [{ index: 0, delta: { content: piece }, finish_reason: last ? 'stop' : null }] }]))
  })
  take(s.transform([{ type: 'end' }]))
  take(s.transform(null))
  return client
}

test('property: mask sends no value upstream, and an echoing model streamed in any chunks gives back exactly the text', async () => {
  await fc.assert(
    fc.asyncProperty(textWithEntities, cuts, async (text, at) => {
      const g = new Guard(maskAll, noFetch)
      const req = body(text)
      await g.screenInput(req, new AbortController().signal)
      const upstream = req.messages[0]?.content as string
      // A value also written where the rules find none (`::1` inside `::1g`, which is no address) goes
      // upstream there, as the client wrote it; everywhere else it is masked.
      const values = found(text).map(([, v]) => v as string)
      const elsewhere = (v: string) => outsideEntities(text).includes(v)
      for (const v of values) if (!elsewhere(v)) expect(upstream).not.toContain(v)
      expect(found(upstream)).toEqual([])
      // The answer comes back in chunks: the client reads the original text, placeholders included only where the client wrote them.
      expect(streamed(g, upstream, at)).toBe(text)
      expect(g.answerText(upstream)).toBe(text)
      // And the log keeps no masked value: every occurrence is hidden, even one the rules would not
      // find (`::1` in `::1g`), so the log may hide more than the upstream's text did, never less.
      const logged = g.scrubText(text)
      for (const v of values) expect(logged).not.toContain(v)
      if (!values.some(elsewhere)) expect(logged).toBe(upstream)
    }),
    // The case a run found (seed -1622211419): the log's scrub had been asked for the upstream's text exactly.
    { numRuns: 400, examples: [['::1 ::1g', []]] },
  )
})

test('property: output redact streamed in any chunks gives what redacting the whole answer gives, and never a value', () => {
  const redact: Guardrail[] = [{ name: 'out', kind: 'pii', on: 'output', action: 'redact', entities: [...PII_ENTITIES] }]
  fc.assert(
    fc.property(textWithEntities, cuts, (text, at) => {
      const whole = new Guard(redact, noFetch).answerText(text)
      const client = streamed(new Guard(redact, noFetch), text, at)
      expect(client).toBe(whole)
      for (const [, v] of found(text)) if (!outsideEntities(text).includes(v as string)) expect(client).not.toContain(v as string)
    }),
    { numRuns: 300, examples: [['::1 ::1g', []]] },
  )
})

test('block names the guardrail and the kind, never the value; the log scrub hides it', async () => {
  const g = new Guard([{ name: 'no-cards', kind: 'pii', on: 'both', action: 'block', entities: ['credit_card'] }], noFetch)
  const err = await g.screenInput(body('pay with 4111 1111 1111 1111 please'), new AbortController().signal).catch((e: unknown) => e)
  expect(err).toBeInstanceOf(GatewayError)
  expect((err as GatewayError).code).toBe('guardrail_blocked')
  expect((err as GatewayError).message).toBe('Guardrail "no-cards" blocked the request: it contains a credit card number')
  expect(g.scrubText('pay with 4111 1111 1111 1111 please')).toBe('pay with [CREDIT_CARD] please')
  expect(g.acted).toEqual([{ name: 'no-cards', action: 'block', entities: ['credit_card'] }])
})

test('regex guardrails: RE2 syntax, patterns that need backtracking refused at configuration, and catastrophic inputs in linear time', () => {
  const refuse = (patterns: string[]) => {
    try {
      checkGuardrails([{ name: 'r', kind: 'regex', on: 'input', action: 'block', patterns }])
      return undefined
    } catch (e) {
      return (e as GatewayError).message
    }
  }
  expect(refuse(['(a)\\1'])).toMatch(/Invalid field "guardrails\/0\/patterns\/0": not a pattern gw can run in linear time .*backreferences and lookaround/)
  expect(refuse(['ok', '(?=x)y'])).toMatch(/patterns\/1/)
  expect(refuse(['(a+)+$', '(x|x)*y', '\\bPROJ-\\d{4}\\b'])).toBeUndefined()
  // The patterns that make backtracking engines take exponential time, against the inputs that trigger it.
  const g = new Guard([{ name: 'evil', kind: 'regex', on: 'input', action: 'redact', patterns: ['(a+)+$', '(x|x)*y', '^(a|aa)+b'] }], noFetch)
  const text = `${'a'.repeat(50_000)}!${'x'.repeat(50_000)}`
  const t0 = performance.now()
  expect(g.scanAnswer(text)).toBe(text)
  expect(performance.now() - t0).toBeLessThan(2000)
  const named = new Guard([{ name: 'project-codes', kind: 'regex', on: 'input', action: 'mask', patterns: ['\\bPROJ-\\d{4}\\b'] }], noFetch)
  const req = body('see PROJ-1234 and PROJ-1234, not PROJ-12')
  return named.screenInput(req, new AbortController().signal).then(() => {
    expect(req.messages[0]?.content).toBe('see [PROJECT_CODES_1] and [PROJECT_CODES_1], not PROJ-12')
    expect(named.answerText('Done: [PROJECT_CODES_1].')).toBe('Done: PROJ-1234.')
  })
})

test('mask refuses "on: output" and duplicate names at configuration', () => {
  expect(() => checkGuardrails([{ name: 'm', kind: 'pii', on: 'output', action: 'mask', entities: ['email'] }])).toThrow(/"on" must be "input" or "both"/)
  expect(() =>
    checkGuardrails([
      { name: 'a', kind: 'pii', on: 'input', action: 'redact', entities: ['email'] },
      { name: 'a', kind: 'pii', on: 'input', action: 'redact', entities: ['phone'] },
    ]),
  ).toThrow(/guardrails\/1\/name.*listed already/)
})

test('scanning costs little: 1 MB of text with every kind asked for', () => {
  const chunk = 'Hello Ada, your order 12345 ships on 2024-01-15; write to ada@example.com or call +44 20 7946 0958. '
  const text = chunk.repeat(Math.ceil(1_000_000 / chunk.length))
  findEntities(text, ALL)
  const t0 = performance.now()
  const hits = findEntities(text, ALL)
  const ms = performance.now() - t0
  expect(hits.length).toBe(2 * Math.ceil(1_000_000 / chunk.length))
  // Generous for a shared machine; docs/policy.md gives the measured figure.
  expect(ms).toBeLessThan(1000)
})

test('property: a stream held for an output webhook gives back exactly the text, and the webhook sees placeholders only', async () => {
  const seen: string[][] = []
  const webhook = (async (_url: string, init: RequestInit) => {
    seen.push((JSON.parse(init.body as string) as { texts: string[] }).texts)
    return Response.json({ allow: true })
  }) as unknown as typeof fetch
  const list: Guardrail[] = [...maskAll, { name: 'review', kind: 'webhook', on: 'output', url: 'http://hook.invalid/', failOpen: false }]
  await fc.assert(
    fc.asyncProperty(textWithEntities, cuts, async (text, at) => {
      const g = new Guard(list, webhook)
      const req = body(text)
      await g.screenInput(req, new AbortController().signal)
      const upstream = req.messages[0]?.content as string
      const s = new HeldStream(g, new AbortController().signal)
      let client = ''
      const take = (parts: StreamPart[] | null) => {
        for (const p of parts ?? []) if (p.type === 'choices') for (const c of p.choices) client += c.delta.content ?? ''
      }
      const pieces = chunked(upstream, at)
      for (const [i, piece] of pieces.entries()) {
        const parts = await s.transform([{ type: 'choices', choices: [{ index: 0, delta: { content: piece }, finish_reason: i === pieces.length - 1 ? 'stop' : null }] }])
        // Nothing of the text goes out before the end.
        expect((parts ?? []).some((p) => p.type === 'choices')).toBe(false)
        take(parts)
      }
      take(await s.transform([{ type: 'end' }]))
      take(await s.transform(null))
      expect(client).toBe(text)
      if (upstream) expect(seen.at(-1)).toEqual([upstream])
    }),
    { numRuns: 200 },
  )
})

test('a large request is screened in overlapping windows: the same values as one pass, and the event loop keeps turning', async () => {
  const g = new Guard([...maskAll, { name: 'codes', kind: 'regex', on: 'input', action: 'redact', patterns: ['\\bPROJ-\\d{4}\\b', 'x+y', '(a|b)+c'] }], noFetch)
  // Values on and around the window edges (every 245,760 characters).
  const filler = 'lorem ipsum dolor sit amet consectetur '.repeat(40_000) // 1.56 MB
  let text = filler
  for (const at of [245_760 - 10, 245_760 * 2 - 3, 245_760 * 3 + 5, 262_144 - 8, 700_000])
    text = `${text.slice(0, at)} ada@example.com 4111 1111 1111 1111 PROJ-1234 ${text.slice(at)}`
  const whole = findEntities(text, ALL).map((f) => [f.start, f.end])
  let turns = 0
  const timer = setInterval(() => turns++, 1)
  const req = body(text)
  const t0 = performance.now()
  await g.screenInput(req, new AbortController().signal)
  const ms = performance.now() - t0
  clearInterval(timer)
  const sent = req.messages[0]?.content as string
  expect(sent).not.toContain('ada@example.com')
  expect(sent).not.toContain('4111 1111 1111 1111')
  expect(sent).not.toContain('PROJ-1234')
  expect(g.answerText(sent)).toBe(text.replaceAll('PROJ-1234', '[CODES]'))
  expect(whole.length).toBe(10)
  // The loop was given back while it scanned (a 1 ms timer ran several times).
  if (ms > 20) expect(turns).toBeGreaterThan(2)
})

test("the log's scrub stays linear with many values: thousands of masked emails are found again by the rules", async () => {
  const g = new Guard(maskAll, noFetch)
  const text = Array.from({ length: 4000 }, (_, i) => `user${i}@example.com wrote`).join(' ')
  const req = body(text)
  await g.screenInput(req, new AbortController().signal)
  const t0 = performance.now()
  expect(g.scrubText(text)).toBe(req.messages[0]?.content as string)
  expect(performance.now() - t0).toBeLessThan(500)
  // A body larger than the log keeps: the preview's strings are scrubbed, the rest left empty.
  const preview = g.scrubbedPreview({ messages: [{ content: text }, { content: text }] }, 1000)
  expect(preview).not.toContain('user0@example.com')
  expect(preview).toContain('[EMAIL_1]')
  expect(preview.length).toBeLessThan(text.length + 200)
})
