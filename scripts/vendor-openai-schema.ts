// Extracts OpenAI's chat response schemas (and every $def they reference) from a JSON-Schema bundle of
// the official openai/openai-openapi spec into test/schemas/openai-chat.schema.json, for the tests.
// Usage: bun scripts/vendor-openai-schema.ts <openai-chat-schemas.json>

const [source] = process.argv.slice(2)
if (!source) throw new Error('usage: bun scripts/vendor-openai-schema.ts <bundle.json>')
const bundle = (await Bun.file(source).json()) as { $schema: string; $id: string; $defs: Record<string, unknown> }
const ROOTS = ['CreateChatCompletionResponse', 'CreateChatCompletionStreamResponse']

const keep = new Set<string>()
const visit = (node: unknown): void => {
  if (Array.isArray(node)) return node.forEach(visit)
  if (typeof node !== 'object' || node === null) return
  for (const [k, v] of Object.entries(node)) {
    if (k === '$ref' && typeof v === 'string' && v.startsWith('#/$defs/')) {
      const name = v.slice('#/$defs/'.length)
      if (!keep.has(name)) {
        keep.add(name)
        visit(bundle.$defs[name])
      }
    } else visit(v)
  }
}
for (const r of ROOTS) {
  keep.add(r)
  visit(bundle.$defs[r])
}
const out = {
  $schema: bundle.$schema,
  $id: 'https://gw.local/test/openai-chat.schema.json',
  $comment:
    'Derived from openai/openai-openapi openapi.yaml (commit f85dbe223d40e1a31cba812ab2d755c7e98a92a3, MIT licence, see LICENSE-openai-openapi.md); ' +
    `only ${ROOTS.join(' and ')} and the definitions they reference; extracted by scripts/vendor-openai-schema.ts.`,
  $defs: Object.fromEntries([...keep].sort().map((k) => [k, bundle.$defs[k]])),
}
await Bun.write('test/schemas/openai-chat.schema.json', `${JSON.stringify(out, null, 1)}\n`)
console.log(`wrote test/schemas/openai-chat.schema.json (${keep.size} definitions)`)

export {}
