// GW_CONFIG: provider keys and routes from a YAML file at start — applied and used by requests —
// and bad files refused with the file, line and field named.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../../src/config'
import { readConfigFile } from '../../src/config-file'
import { startGateway } from '../../src/server'
import { type FakeUpstream, startFake } from '../fakes/upstream'
import { startTestGateway, type TestGateway } from '../helpers/gateway'

const dir = mkdtempSync(join(tmpdir(), 'gw-config-file-'))
let openai: FakeUpstream
let mistral: FakeUpstream
let gw: TestGateway

const file = (name: string, text: string) => {
  const path = join(dir, name)
  writeFileSync(path, text)
  return path
}

beforeAll(async () => {
  openai = await startFake('openai')
  mistral = await startFake('mistral')
  process.env.GW_TEST_MISTRAL_KEY = mistral.apiKey
  const path = file(
    'gw.yaml',
    `# keys and routes of the default org, and of acme
providers:
  openai:
    - name: primary
      apiKey: ${openai.apiKey}
      baseUrl: ${openai.url}
      weight: 2
  mistral:
    - name: main
      apiKeyEnv: GW_TEST_MISTRAL_KEY
      baseUrl: ${mistral.url}
routes:
  fast:
    targets:
      - model: mistral/mistral-small-latest
    fallback:
      - model: openai/gpt-4o-mini
orgs:
  acme:
    routes:
      smart:
        targets: [{model: openai/gpt-4o}]
`,
  )
  gw = await startTestGateway({}, { GW_CONFIG: path })
})
afterAll(async () => {
  await gw.stop()
  await openai.stop()
  await mistral.stop()
  rmSync(dir, { recursive: true, force: true })
})

test('keys and routes from the file are in the store and serve requests', async () => {
  const org = (await (await gw.admin('GET', '/orgs/default')).json()) as Record<string, any>
  expect(org.providers.map((p: Record<string, unknown>) => [p.provider, p.name, p.weight])).toEqual([
    ['mistral', 'main', 1],
    ['openai', 'primary', 2],
  ])
  expect(org.routes.map((r: { name: string }) => r.name)).toEqual(['fast'])
  expect(((await (await gw.admin('GET', '/orgs/acme/routes')).json()) as { data: { name: string }[] }).data.map((r) => r.name)).toEqual(['smart'])

  mistral.enqueue({ kind: 'error', status: 503 })
  const res = await gw.chat({ model: 'fast', messages: [{ role: 'user', content: 'hi' }] })
  expect(res.status).toBe(200)
  const log = await gw.log(res.headers.get('x-gw-request-id') as string)
  expect(log).toMatchObject({ route: 'fast', model: 'openai/gpt-4o-mini', providerKey: 'primary', fallback: { used: true } })
})

describe('a bad file stops the start with the file, line and field', () => {
  test.each([
    ['routes:\n  fast:\n    targets:\n      - model: gpt-4o\n', ':4: routes.fast.targets[0].model: Invalid targets[0].model "gpt-4o"'],
    ['providers:\n  openai:\n    - name: a\n      apiKey: sk-123456789012\n      weight: -1\n', ':5: providers.openai[0].weight: Invalid field "weight"'],
    ['providers:\n  acme:\n    - name: a\n      apiKey: k\n', ':3: providers.acme[0]: Unknown provider "acme"'],
    ['providers:\n  openai:\n    - name: a\n      apiKeyEnv: GW_TEST_NOT_SET_ANYWHERE\n', ':4: providers.openai[0].apiKeyEnv: the environment variable GW_TEST_NOT_SET_ANYWHERE is not set'],
    // Nested fields are placed by the check's problem (its JSON Pointer), not by reading the message.
    ['routes:\n  fast:\n    targets: [{model: openai/gpt-4o}]\n    fallback:\n      - triggers: [timeout]\n', ':5: routes.fast.fallback[0].model: Missing required field "fallback/0/model"'],
    ['orgs:\n  acme:\n    routes:\n      smart:\n        targets:\n          - model: openai/gpt-4o\n          - model: openai/gpt-4o-mini\n            weight: 0\n', ':8: orgs.acme.routes.smart.targets[1].weight: Invalid field "targets/1/weight"'],
    ['routes: [1, 2]\n', ':1: routes: expected a mapping'],
    ['orgs:\n  Bad_Org:\n    routes: {}\n', ':2: orgs.Bad_Org: org ids are lowercase'],
    ['rutes:\n  fast: {}\n', ':1: rutes: unknown field'],
    ['routes:\n  fast: [unclosed\n', 'is not valid YAML'],
  ])('%#', async (text, expected) => {
    const path = file('bad.yaml', text)
    expect(() => readConfigFile(path)).toThrow(expected)
    // Started with it, gw refuses to start with the same message.
    await expect(startGateway(loadConfig({ GW_DB: ':memory:', GW_PORT: '0', GW_CONFIG: path }), { listen: false })).rejects.toThrow(expected)
  })
  test('a missing file', () => {
    expect(() => readConfigFile(join(dir, 'nope.yaml'))).toThrow('GW_CONFIG: cannot read')
  })
})
