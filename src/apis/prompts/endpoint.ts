// POST /v1/prompts/{idOrSlug}/run, declared (PRODUCT §7, §16): a saved prompt rendered into a chat
// request, answered like chat completions; and the same run for the dashboard's playground.

import { chatShape } from '../chat/answer'
import { CHAT_ADAPTERS } from '../chat/chunk-pass'
import { notFound } from '../../errors'
import { type EndpointIo, runForOrg } from '../../pipeline'
import { headerMetadata } from '../../pipeline/chat-input'
import type { Deps, RequestContext } from '../../pipeline/context'
import type { EndpointDeclaration } from '../../pipeline/endpoint'
import { parsePromptRun } from '../../pipeline/prompt-input'
import { ChatCompletionAnswer } from '../../schemas/answers'
import { PromptVersionQuery, RunBody } from '../../schemas/prompt-run-body'

export const promptRun: EndpointDeclaration = {
  id: 'runPrompt',
  method: 'POST',
  path: '/v1/prompts/:idOrSlug/run',
  label: '/v1/prompts/run',
  summary: 'Runs a saved prompt version (published by default) with its variables, answered as a chat completion',
  audience: 'client',
  body: RunBody,
  query: PromptVersionQuery,
  answer: ChatCompletionAnswer,
  whenEmpty: {},
  streams: true,
  errorStyle: 'gw',
  operation: 'chat',
  async plan({ deps, ctx, body, params, query }) {
    const input = await parsePromptRun(deps.store, ctx, params.idOrSlug as string, query?.get('version') ?? null, body.value)
    input.metadata = headerMetadata(ctx.headers) ?? input.metadata
    return { input, shape: chatShape(input.body.stream_options?.include_usage === true), ...CHAT_ADAPTERS }
  },
}

/** The dashboard's playground (POST /admin/orgs/:org/prompts/:prompt/run): the admin API checked the caller. */
export async function runPromptAsAdmin(deps: Deps, request: RequestContext, orgId: string, io: EndpointIo): Promise<Response> {
  const org = await deps.orgs.get(orgId)
  if (!org) throw notFound(`Org "${orgId}" not found`)
  return runForOrg(deps, promptRun, request, org, io)
}
