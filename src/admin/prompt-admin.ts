// Saved-prompt administration (PRODUCT §6, §7): prompts, numbered versions, publishing, partials; shared by HTTP, CLI and prompt files.

import { createHash } from 'node:crypto'
import { badRequest, echo, GatewayError, notFound } from '../errors'
import { parseModelRef } from '../pipeline/chat-input'
import { checkPartialBody, checkPromptBody, checkPromptVersionBody, PARTIAL_NAME_PATTERN } from '../schemas/admin-bodies'
import type { PromptRecord, PromptVersion, PromptVersionContent } from '../domain/prompt'
import type { Store } from '../store/types'
import type { AuditLog } from './audit'

/** Hash of what a version holds, in a fixed field order. */
export function contentHash(c: PromptVersionContent): string {
  const fields = [c.systemTemplate ?? null, c.userTemplate, c.variables, c.model, c.temperature ?? null, c.maxTokens ?? null]
  return createHash('sha256').update(JSON.stringify(fields)).digest('hex')
}

/** A checked version body → its content (model must be `provider/model`, variable names unique). */
export function toVersionContent(raw: unknown): { content: PromptVersionContent; publish: boolean } {
  const b = checkPromptVersionBody(raw)
  parseModelRef(b.model)
  const variables = (b.variables ?? []).map((v) => ({ name: v.name, type: v.type, required: v.required ?? false }))
  const seen = new Set<string>()
  for (const v of variables) {
    if (seen.has(v.name)) throw badRequest(`Variable "${v.name}" is declared twice`)
    seen.add(v.name)
  }
  const content = {
    systemTemplate: b.systemTemplate,
    userTemplate: b.userTemplate,
    variables,
    model: b.model,
    temperature: b.temperature,
    maxTokens: b.maxTokens,
  }
  return { content, publish: b.publish ?? false }
}

const PARTIAL_NAME = new RegExp(PARTIAL_NAME_PATTERN)

export class PromptAdmin {
  constructor(
    private readonly store: Store,
    private readonly requireOrg: (orgId: string) => Promise<unknown>,
    readonly audit: AuditLog,
  ) {}

  async requirePrompt(orgId: string, idOrSlug: string): Promise<PromptRecord> {
    await this.requireOrg(orgId)
    const p = await this.store.prompts.findPrompt(orgId, idOrSlug)
    if (!p) throw notFound(`Prompt "${idOrSlug}" not found in org "${orgId}"`)
    return p
  }

  async createPrompt(orgId: string, raw: unknown): Promise<{ id: string; slug: string }> {
    await this.requireOrg(orgId)
    const body = checkPromptBody(raw)
    if (await this.store.prompts.findPrompt(orgId, body.slug))
      throw new GatewayError(409, 'gateway_error', `Org "${orgId}" already has a prompt "${body.slug}"`)
    const p = await this.store.prompts.createPrompt({ id: crypto.randomUUID(), orgId, slug: body.slug, name: body.name })
    await this.audit.record({ action: 'prompt.create', org: orgId, target: `prompt:${p.slug}`, before: null, after: publicPrompt(p) })
    return { id: p.id, slug: p.slug }
  }

  /** A prompt managed by a file gets the version too, with a `warning` that the file wins at the next start. */
  async addVersion(orgId: string, idOrSlug: string, raw: unknown): Promise<{ version: number; published: boolean; warning?: string }> {
    const p = await this.requirePrompt(orgId, idOrSlug)
    const { content, publish } = toVersionContent(raw)
    const v = await this.store.prompts.addVersion(p.id, content, contentHash(content), publish)
    await this.audit.record({ action: 'prompt.version.create', org: orgId, target: `prompt:${p.slug}/v${v.version}`, before: null, after: publicVersion(v) })
    return { version: v.version, published: publish, ...(p.sourceFile === undefined ? {} : { warning: fileWinsWarning(p.slug, p.sourceFile) }) }
  }

  async publish(orgId: string, idOrSlug: string, version: string) {
    const p = await this.requirePrompt(orgId, idOrSlug)
    const n = Number(version)
    if (!Number.isInteger(n) || !(await this.store.prompts.publish(p.id, n)))
      throw notFound(`Prompt "${idOrSlug}" has no version "${version}"`)
    await this.audit.record({ action: 'prompt.publish', org: orgId, target: `prompt:${p.slug}`, before: { publishedVersion: p.publishedVersion ?? null }, after: { publishedVersion: n } })
    return { id: p.id, slug: p.slug, publishedVersion: n }
  }

  async list(orgId: string) {
    await this.requireOrg(orgId)
    const prompts = await this.store.prompts.listPrompts(orgId)
    return { data: prompts.map((p) => ({ ...publicPrompt(p), createdAt: p.createdAt })) }
  }

  async describe(orgId: string, idOrSlug: string) {
    const p = await this.requirePrompt(orgId, idOrSlug)
    const versions = await this.store.prompts.listVersions(p.id)
    return { ...publicPrompt(p), versions: versions.map(publicVersion) }
  }

  async putPartial(orgId: string, name: string, raw: unknown): Promise<{ name: string; template: string }> {
    await this.requireOrg(orgId)
    if (!PARTIAL_NAME.test(name)) throw badRequest(`Invalid partial name ${echo(name)}: letters, digits, "_", "." and "-", at most 64`)
    const { template } = checkPartialBody(raw)
    const before = (await this.store.prompts.getPartials(orgId)).get(name)
    await this.store.prompts.putPartial(orgId, name, template)
    await this.audit.record({ action: 'partial.set', org: orgId, target: `partial:${name}`, before: before === undefined ? null : { name, template: before }, after: { name, template } })
    return { name, template }
  }
}

export const fileWinsWarning = (slug: string, file: string) =>
  `Prompt "${slug}" is managed by the file ${file}: at the next start gw loads that file again and its content becomes the newest version (edit the file to keep a change)`

function publicPrompt(p: PromptRecord) {
  return {
    id: p.id,
    slug: p.slug,
    name: p.name ?? null,
    publishedVersion: p.publishedVersion ?? null,
    currentVersion: p.currentVersion ?? null,
    sourceFile: p.sourceFile ?? null,
  }
}

function publicVersion(v: PromptVersion) {
  const { promptId: _p, contentHash: _h, ...rest } = v
  return rest
}
