// TypeBox schema of the prompt-run body (seed: POST /v1/prompts/{id_or_slug}/run).

import { Type as t } from '@sinclair/typebox'
import { Identifier, validator } from './chat-body'

const temperature = t.Number({ minimum: 0, maximum: 2 })
const maxTokens = t.Integer({ minimum: 1 })

/** Chat-completions fields a run may add; the chat body schema checks them once the run is assembled. */
export const RUN_PASSED_THROUGH = ['output_schema', 'x-gw-output-schema', 'fallback_chain', 'x-gw-fallback-chain', 'stream_options'] as const

export const RunBody = t.Object(
  {
    variables: t.Optional(t.Record(t.String(), t.Unknown())),
    stream: t.Optional(t.Boolean()),
    max_tokens: t.Optional(maxTokens),
    temperature: t.Optional(temperature),
    overrides: t.Optional(
      t.Object(
        { model: t.Optional(Identifier({ minLength: 1 })), temperature: t.Optional(temperature), max_tokens: t.Optional(maxTokens) },
        { additionalProperties: false },
      ),
    ),
    metadata: t.Optional(t.Unknown()),
    user: t.Optional(Identifier()),
    ...Object.fromEntries(RUN_PASSED_THROUGH.map((f) => [f, t.Optional(t.Unknown())])),
  },
  { additionalProperties: false, title: 'PromptRun' },
)
export const checkRunBody = validator(RunBody)

/** `?version=published|current|<n>` on a run (PRODUCT §7). */
export const PromptVersionQuery = t.Object({ version: t.Optional(t.String({ description: 'published (the default), current or a version number' })) })
