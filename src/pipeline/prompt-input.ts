// Turns a prompt run into a ChatInput: select the version, coerce variables, render, apply overrides; and links chat requests to prompts.

import { badRequest, echo, notFound } from '../errors'
import { render } from '../prompts/render'
import { resolveVariables } from '../prompts/variables'
import { checkRunBody, RUN_PASSED_THROUGH } from '../schemas/prompt-run-body'
import type { PromptRecord, PromptVersion } from '../domain/prompt'
import type { Store } from '../store/types'
import { headerMetadata, parseChatInput, withHeaderFields } from './chat-input'
import type { AuthedContext, ChatInput, Deps, PromptLink } from './context'

/** `published` (default), `current` or a version number. */
export async function selectVersion(store: Store, p: PromptRecord, selector: string | null): Promise<PromptVersion> {
  let n: number | undefined
  if (selector === null || selector === 'published') {
    n = p.publishedVersion
    if (n === undefined) throw notFound(`Prompt "${p.slug}" has no published version (publish one, or run ?version=current)`)
  } else if (selector === 'current') {
    n = p.currentVersion
    if (n === undefined) throw notFound(`Prompt "${p.slug}" has no saved version yet`)
  } else if (/^[1-9]\d{0,8}$/.test(selector)) {
    n = Number(selector)
  } else {
    throw badRequest(`Invalid version ${echo(selector)}: expected published, current or a version number`)
  }
  const v = await store.prompts.getVersion(p.id, n)
  if (!v) throw notFound(`Prompt "${p.slug}" has no version ${n}`)
  return v
}

/** Loads, renders and assembles the run's chat request; sets ctx.prompt. */
export async function parsePromptRun(
  store: Store,
  ctx: AuthedContext,
  ref: string,
  selector: string | null,
  raw: unknown,
): Promise<ChatInput> {
  const orgId = ctx.identity.orgId
  const prompt = await store.prompts.findPrompt(orgId, ref)
  if (!prompt) throw notFound(`Prompt ${echo(ref)} not found`)
  const version = await selectVersion(store, prompt, selector)
  ctx.prompt = { id: prompt.id, slug: prompt.slug, version: version.version }
  const body = checkRunBody(raw)
  const values = resolveVariables(version.variables, body.variables ?? {})
  const partials = await store.prompts.getPartials(orgId)
  const messages: { role: string; content: string }[] = []
  const system = version.systemTemplate === undefined ? '' : render(version.systemTemplate, partials, values)
  if (system.trim()) messages.push({ role: 'system', content: system })
  messages.push({ role: 'user', content: render(version.userTemplate, partials, values) })
  const o = body.overrides ?? {}
  const chat: Record<string, unknown> = {
    model: o.model ?? version.model,
    messages,
    stream: body.stream,
    temperature: o.temperature ?? body.temperature ?? version.temperature,
    max_tokens: o.max_tokens ?? body.max_tokens ?? version.maxTokens,
    metadata: body.metadata,
    user: body.user,
  }
  for (const f of RUN_PASSED_THROUGH) chat[f] = (body as Record<string, unknown>)[f]
  for (const k of Object.keys(chat)) if (chat[k] === undefined) delete chat[k]
  return parseChatInput(withHeaderFields(chat, ctx.headers))
}

/** `prompt_id` on a chat request: the prompt it names (UUID or slug), for the log only; unknown refs link nothing. */
export async function linkPrompt(store: Store, orgId: string, ref: string): Promise<PromptLink | undefined> {
  const p = await store.prompts.findPrompt(orgId, ref)
  return p ? { id: p.id, slug: p.slug, version: null } : undefined
}

/** The gateway's headers on a parsed request: `x-gw-metadata` wins over the body's metadata; `prompt_id` links the log entry to its prompt. */
export async function applyGatewayHeaders(deps: Deps, ctx: AuthedContext, input: ChatInput): Promise<ChatInput> {
  input.metadata = headerMetadata(ctx.headers) ?? input.metadata
  if (input.promptRef) ctx.prompt = await linkPrompt(deps.store, ctx.identity.orgId, input.promptRef)
  return input
}
