// What the log records about a structured-output answer: whether it parsed as JSON and, when the
// request carried a schema, whether the value matched it (checked in turns of a few milliseconds).

import { matchesSchemaInTurns } from '../json-schema-check'
import { jsonRequest } from '../providers/json-output'
import type { ChatRequest } from '../providers/openai-types'
import type { LogEntry } from '../domain/log-entry'

export async function checkStructuredOutput(sent: ChatRequest, answer: string | null | (() => string)): Promise<LogEntry['structuredOutput']> {
  const json = jsonRequest(sent)
  if (!json) return null
  const content = typeof answer === 'function' ? answer() : answer
  const schema = json.mode === 'json_schema' ? json.schema : undefined
  let value: unknown
  try {
    value = JSON.parse(content ?? '')
  } catch {
    return { parsed: false, matchesSchema: schema ? false : null }
  }
  return { parsed: true, matchesSchema: schema ? await matchesSchemaInTurns(value, schema) : null }
}
