// Validates gateway output against OpenAI's official chat response schemas (test/schemas, MIT-derived).

import Ajv2020 from 'ajv/dist/2020'
import addFormats from 'ajv-formats'
import schema from '../schemas/openai-chat.schema.json'

const ajv = new Ajv2020({ strict: false, allErrors: true })
addFormats(ajv)
ajv.addFormat('unixtime', true)
ajv.addSchema(schema)

const validatorFor = (name: string) => {
  const v = ajv.getSchema(`${schema.$id}#/$defs/${name}`)
  if (!v) throw new Error(`no schema ${name}`)
  return v
}
const completion = validatorFor('CreateChatCompletionResponse')
const chunk = validatorFor('CreateChatCompletionStreamResponse')

function check(v: ReturnType<typeof validatorFor>, what: string, value: unknown): void {
  if (v(value)) return
  const errors = (v.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ')
  throw new Error(`${what} does not match OpenAI's schema: ${errors}\n${JSON.stringify(value).slice(0, 500)}`)
}

export function assertChatCompletion(body: unknown): void {
  check(completion, 'chat completion', body)
}

export function assertChatChunk(value: unknown): void {
  check(chunk, 'chat completion chunk', value)
}
