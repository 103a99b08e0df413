// `bun bench/stage-cost.ts [commit]`: the serving thread's CPU per OpenAI JSON request, stage by stage, under wrk.
// Builds seven source trees of `commit` (HEAD) in a temp folder, five of them each answering at a later
// point of the pipeline with a plain `fetch` to the fake upstream where it stops, and runs them side by
// side with bench/ab.ts (alternating rounds, fastest round each; AB_ROUNDS, AB_CPUS as there):
//   edge      the route (Elysia, the request's context, the body read) and a plain fetch: what any handler pays
//   policy    + stage 1 (auth), the body parsed and validated (plan), stage 2 (policy, limits)
//   dispatch  + stages 3–5 (route, clamp, the attempt: adapter, timer, abort wiring, health), answered with the upstream's text
//   answer    + stage 6 (the JSON answer, headers, cost) with a settlement that does nothing
//   full      + stage 7 (the log entry handed over, the observation, the charges settled): gw as it is
// and two trees of gw less one part of stage 7:
//   no-log-hand-over   the entry built but not handed to the log path (no log thread work either)
//   no-observation     no metrics, access line or span
// The differences say where gw's serving thread spends more than the same-work floor
// (bench/same-work-floor.ts) does for the same work (docs/benchmarks.md, "Where the serving thread's time goes").
// A stub that no longer finds its place in the sources fails loudly: update it with the pipeline.

import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { $ } from 'bun'

const ROOT = join(import.meta.dir, '..')
const commit = process.argv[2] ?? 'HEAD'
const work = mkdtempSync(join(tmpdir(), 'gw-stage-cost-'))
process.on('exit', () => rmSync(work, { recursive: true, force: true }))

/** A plain call to the fake upstream with `body`, answered with its text as is. */
const plainFetch = (body: string) =>
  `const up = await fetch(process.env.GW_OPENAI_BASE_URL + '/chat/completions', { method: 'POST', body: ${body}, headers: { 'content-type': 'application/json', authorization: 'Bearer stage-cost' } })
      return new Response(await up.text(), { headers: { 'content-type': 'application/json' } })`

interface Stub {
  file: string
  find: string
  replace: string
}

const ENDPOINTS = 'src/http/routes/endpoints.ts'
const RUNNER = 'src/pipeline/index.ts'
const SETTLEMENT = 'src/pipeline/settlement.ts'
const STUBS: Record<string, Stub[]> = {
  edge: [
    {
      file: ENDPOINTS,
      find: `({ request, server, params }) =>
        withBody(deps, request, server, e.whenEmpty, (readBody) =>
          runEndpoint(deps, e, contextFor(request, label, e), { readBody, params, url: request.url }),
        ),`,
      replace: `async ({ request }) => {
      contextFor(request, label, e)
      const text = (await request.text()).replace('"openai/', '"')
      ${plainFetch('text')}
      },`,
    },
  ],
  policy: [
    {
      file: RUNNER,
      find: `    if (plan.answerHere) return await plan.answerHere(settlement.finish)\n`,
      replace: `    if (plan.answerHere) return await plan.answerHere(settlement.finish)
    {
      ${plainFetch("JSON.stringify({ ...input.body, model: input.model.name.slice(input.model.name.indexOf('/') + 1) })")}
    }\n`,
    },
  ],
  dispatch: [
    {
      file: RUNNER,
      find: `    if (!d.ok) {\n`,
      replace: `    if (d.ok && d.answer.kind === 'json') return new Response(d.answer.text, { headers: { 'content-type': 'application/json' } })\n    if (!d.ok) {\n`,
    },
  ],
  answer: [
    {
      file: RUNNER,
      find: `    if (!d.ok) {\n`,
      replace: `    if (d.ok && d.answer.kind === 'json') return await jsonAnswer(deps, ctx, d, () => undefined, plan.shape)\n    if (!d.ok) {\n`,
    },
  ],
  full: [],
  'no-log-hand-over': [
    { file: SETTLEMENT, find: '  const recorded = recordRequest(deps, ctx, input, o)\n', replace: '  const recorded = { entry: logEntry(deps, ctx, input, o), room: undefined }\n' },
  ],
  'no-observation': [{ file: SETTLEMENT, find: '  observe(deps, ctx, input, recorded.entry, o)\n  return recorded\n', replace: '  return recorded\n' }],
}

const trees: string[] = []
for (const [name, stubs] of Object.entries(STUBS)) {
  const tree = join(work, name)
  await $`mkdir -p ${tree} && git -C ${ROOT} archive ${commit} | tar -x -C ${tree}`.quiet()
  symlinkSync(join(ROOT, 'node_modules'), join(tree, 'node_modules'))
  for (const s of stubs) {
    const path = join(tree, s.file)
    const text = readFileSync(path, 'utf8')
    if (!text.includes(s.find)) throw new Error(`stage-cost: the stub "${name}" no longer finds its place in ${s.file}`)
    writeFileSync(path, text.replace(s.find, s.replace))
  }
  trees.push(tree)
}
const ab = Bun.spawn([process.execPath, join(import.meta.dir, 'ab.ts'), 'openai-json', ...trees], { stdout: 'inherit', stderr: 'inherit' })
process.exitCode = await ab.exited
