// PostgreSQL storage of saved prompts, their numbered immutable versions, and partials.

import type { SQL } from 'bun'
import { type PromptRow, toPrompt, toVersion, type VersionRow } from '../rows'
import type { PromptRecord, PromptVersion, PromptVersionContent } from '../../domain/prompt'
import type { PromptStore } from '../types'
import { q } from './errors'

export class PgPromptStore implements PromptStore {
  constructor(private readonly sql: SQL) {}

  private select(where: SQL.Query<unknown>) {
    return this.sql<PromptRow[]>`
      SELECT p.*, (SELECT max(version) FROM prompt_versions v WHERE v.prompt_id = p.id) AS current_version
      FROM prompts p WHERE ${where} ORDER BY p.slug`
  }

  async createPrompt(rec: { id: string; orgId: string; slug: string; name: string | undefined }): Promise<PromptRecord> {
    await q(
      this.sql`INSERT INTO prompts (id, org_id, slug, name, created_at)
               VALUES (${rec.id}, ${rec.orgId}, ${rec.slug}, ${rec.name ?? null}, ${new Date().toISOString()})`,
      `prompt "${rec.slug}"`,
    )
    return (await this.findPrompt(rec.orgId, rec.id)) as PromptRecord
  }

  async findPrompt(orgId: string, idOrSlug: string): Promise<PromptRecord | undefined> {
    const [row] = await q(this.select(this.sql`p.org_id = ${orgId} AND (p.id = ${idOrSlug} OR p.slug = ${idOrSlug})`))
    return row ? toPrompt(row) : undefined
  }

  async listPrompts(orgId: string): Promise<PromptRecord[]> {
    return (await q(this.select(this.sql`p.org_id = ${orgId}`))).map(toPrompt)
  }

  async addVersion(promptId: string, c: PromptVersionContent, contentHash: string, publish: boolean): Promise<PromptVersion> {
    return q(
      this.sql.begin(async (tx) => {
        // The prompt's row lock serialises concurrent saves (other instances included): numbers never clash.
        await tx`SELECT 1 FROM prompts WHERE id = ${promptId} FOR UPDATE`
        const [row] = await tx<VersionRow[]>`
          INSERT INTO prompt_versions
            (prompt_id, version, system_template, user_template, variables, model, temperature, max_tokens, content_hash, created_at)
          SELECT ${promptId}, coalesce(max(version), 0) + 1, ${c.systemTemplate ?? null}, ${c.userTemplate}, ${c.variables}::jsonb,
                 ${c.model}, ${c.temperature ?? null}, ${c.maxTokens ?? null}, ${contentHash}, ${new Date().toISOString()}
          FROM prompt_versions WHERE prompt_id = ${promptId}
          RETURNING *`
        if (!row) throw new Error('insert returned nothing')
        if (publish) await tx`UPDATE prompts SET published_version = ${row.version} WHERE id = ${promptId}`
        return toVersion(row)
      }),
      'prompt version',
    )
  }

  async getVersion(promptId: string, version: number): Promise<PromptVersion | undefined> {
    const [row] = await q<VersionRow[]>(this.sql`SELECT * FROM prompt_versions WHERE prompt_id = ${promptId} AND version = ${version}`)
    return row ? toVersion(row) : undefined
  }

  async listVersions(promptId: string): Promise<PromptVersion[]> {
    return (await q<VersionRow[]>(this.sql`SELECT * FROM prompt_versions WHERE prompt_id = ${promptId} ORDER BY version`)).map(toVersion)
  }

  async publish(promptId: string, version: number): Promise<boolean> {
    const res = await q(this.sql`
      UPDATE prompts SET published_version = ${version}
      WHERE id = ${promptId} AND EXISTS (SELECT 1 FROM prompt_versions WHERE prompt_id = ${promptId} AND version = ${version})`)
    return res.count > 0
  }

  async setSourceFile(promptId: string, sourceFile: string | undefined): Promise<void> {
    await q(this.sql`UPDATE prompts SET source_file = ${sourceFile ?? null} WHERE id = ${promptId}`)
  }

  async putPartial(orgId: string, name: string, template: string): Promise<void> {
    await q(this.sql`
      INSERT INTO prompt_partials (org_id, name, template, updated_at) VALUES (${orgId}, ${name}, ${template}, ${new Date().toISOString()})
      ON CONFLICT (org_id, name) DO UPDATE SET template = excluded.template, updated_at = excluded.updated_at`)
  }

  async getPartials(orgId: string): Promise<Map<string, string>> {
    const rows = await q<{ name: string; template: string }[]>(this.sql`SELECT name, template FROM prompt_partials WHERE org_id = ${orgId}`)
    return new Map(rows.map((r) => [r.name, r.template]))
  }
}
