// Prompts as code: a changed file becomes a new version, unchanged files change nothing, publish, partials, bad files skipped.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadPromptFiles, readPromptFiles } from '../../src/prompts/prompt-files'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { startTestGateway, type TestGateway } from '../helpers/gateway'

let openai: FakeUpstream
let gw: TestGateway
const dir = mkdtempSync(join(tmpdir(), 'gw-prompt-files-'))

const file = (front: string, body: string) => `---\n${front}\n---\n${body}\n`
const write = (path: string, text: string) => writeFileSync(join(dir, path), text)
const reload = async () => loadPromptFiles(gw.gw.deps.store, gw.gw.admin.prompts, (await readPromptFiles(dir, false)) ?? [])
const describePrompt = async (slug: string) => (await (await gw.admin('GET', `/orgs/default/prompts/${slug}`)).json()) as Record<string, any>

beforeAll(async () => {
  mkdirSync(join(dir, 'partials'))
  write('hello.md', file('model: openai/gpt-4o-mini\nvariables:\n  who: string', 'Hello {{who}}. {{> sign}}'))
  write('partials/sign.md', 'Bye.')
  write('README.md', 'not a prompt')
  openai = await startFake('openai')
  gw = await startTestGateway({ openai }, { GW_PROMPTS_DIR: dir })
})
afterAll(async () => {
  await gw.stop()
  await openai.stop()
  rmSync(dir, { recursive: true, force: true })
})

test('files load at start (README.md ignored); without publish: true the version is saved but not published', async () => {
  expect(gw.gw.prompts).toEqual({ prompts: 1, partials: 1, newVersions: 1, published: 0, skipped: [] })
  expect(await describePrompt('hello')).toMatchObject({ publishedVersion: null, currentVersion: 1 })
  const res = await gw.fetch('/v1/prompts/hello/run?version=current', { method: 'POST', body: JSON.stringify({ variables: { who: 'Ann' } }) })
  expect(res.status).toBe(200)
  expect((openai.requests.at(-1)?.body as any).messages).toEqual([{ role: 'user', content: 'Hello Ann. Bye.' }])
})

test('an unchanged file adds nothing; a changed one is a new version; publish: true publishes it', async () => {
  expect(await reload()).toMatchObject({ newVersions: 0, published: 0 })
  write('hello.md', file('model: openai/gpt-4o-mini\nvariables:\n  who: string', 'Hi {{who}}!'))
  expect(await reload()).toMatchObject({ newVersions: 1, published: 0 })
  expect(await describePrompt('hello')).toMatchObject({ publishedVersion: null, currentVersion: 2 })
  write('hello.md', file('model: openai/gpt-4o-mini\npublish: true\nvariables:\n  who: string', 'Hi {{who}}!'))
  expect(await reload()).toMatchObject({ newVersions: 0, published: 1 })
  expect(await describePrompt('hello')).toMatchObject({ publishedVersion: 2, currentVersion: 2 })
  expect(await reload()).toMatchObject({ newVersions: 0, published: 0 })
})

test('slug, name and org from front matter; CRLF files; a bad file is skipped with the reason', async () => {
  await gw.admin('POST', '/orgs', { id: 'team-b', name: 'B' })
  write('other.md', file('slug: renamed\nname: Renamed prompt\norg: team-b\nmodel: openai/gpt-4o\npublish: true', 'x').replace(/\n/g, '\r\n'))
  write('broken.md', file('model: gpt-4o', 'no provider'))
  write('typo.md', file('model: openai/gpt-4o\ntemprature: 1', 'x'))
  write('nofront.md', 'just text')
  const report = await reload()
  expect(report.skipped).toEqual([
    expect.stringMatching(/^broken\.md: .*provider\/model-name/),
    expect.stringMatching(/^nofront\.md: no front matter/),
    expect.stringMatching(/^typo\.md: unknown front matter field\(s\): temprature/),
  ])
  const b = (await (await gw.admin('GET', '/orgs/team-b/prompts/renamed')).json()) as Record<string, any>
  expect(b).toMatchObject({ name: 'Renamed prompt', publishedVersion: 1 })
  expect(b.versions[0].userTemplate).toBe('x')
})

test('a prompt loaded from a file says so in the admin API; saving a version of it warns that the file wins at the next start', async () => {
  const source = join(dir, 'hello.md')
  expect(await describePrompt('hello')).toMatchObject({ sourceFile: source })
  const listed = (await (await gw.admin('GET', '/orgs/default/prompts')).json()) as { data: Record<string, any>[] }
  expect(listed.data.find((p) => p.slug === 'hello')).toMatchObject({ sourceFile: source })

  const saved = await gw.admin('POST', '/orgs/default/prompts/hello/versions', { userTemplate: 'Edited {{who}}', model: 'openai/gpt-4o-mini', variables: [{ name: 'who', type: 'string' }] })
  expect(saved.status).toBe(201)
  const body = (await saved.json()) as Record<string, any>
  expect(body.warning).toContain(source)
  expect(body.warning).toContain('next start')
  // …and it does: the next load makes the file's content the newest version again.
  expect(await reload()).toMatchObject({ newVersions: 1 })
  const after = await describePrompt('hello')
  expect(after.versions.at(-1).userTemplate).toBe('Hi {{who}}!')

  // A prompt made through the API is not managed: no mark, no warning.
  await gw.admin('POST', '/orgs/default/prompts', { slug: 'by-hand' })
  expect(await describePrompt('by-hand')).toMatchObject({ sourceFile: null })
  const own = (await (await gw.admin('POST', '/orgs/default/prompts/by-hand/versions', { userTemplate: 'x', model: 'openai/gpt-4o-mini' })).json()) as Record<string, any>
  expect(own.warning).toBeUndefined()

  // A file that is gone no longer manages its prompt.
  rmSync(source)
  await reload()
  expect(await describePrompt('hello')).toMatchObject({ sourceFile: null })
  const free = (await (await gw.admin('POST', '/orgs/default/prompts/hello/versions', { userTemplate: 'y', model: 'openai/gpt-4o-mini' })).json()) as Record<string, any>
  expect(free.warning).toBeUndefined()
})
