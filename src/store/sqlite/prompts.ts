// SQLite storage of saved prompts, their numbered immutable versions, and partials.

import type { Database } from 'bun:sqlite'
import { type PromptRow, toPrompt, toVersion, type VersionRow } from '../rows'
import type { PromptRecord, PromptVersion, PromptVersionContent } from '../../domain/prompt'
import type { PromptStore } from '../types'
import { insertOnce } from './errors'

const SELECT_PROMPT = `SELECT p.*, (SELECT max(version) FROM prompt_versions v WHERE v.prompt_id = p.id) AS current_version FROM prompts p`

export class SqlitePromptStore implements PromptStore {
  private readonly q
  constructor(private readonly db: Database) {
    this.q = {
      insert: db.query<null, [string, string, string, string | null, string]>(
        'INSERT INTO prompts (id, org_id, slug, name, created_at) VALUES (?1, ?2, ?3, ?4, ?5)',
      ),
      find: db.query<PromptRow, [string, string]>(`${SELECT_PROMPT} WHERE p.org_id = ?1 AND (p.id = ?2 OR p.slug = ?2)`),
      list: db.query<PromptRow, [string]>(`${SELECT_PROMPT} WHERE p.org_id = ?1 ORDER BY p.slug`),
      nextVersion: db.query<{ n: number }, [string]>(
        'SELECT coalesce(max(version), 0) + 1 AS n FROM prompt_versions WHERE prompt_id = ?1',
      ),
      insertVersion: db.query<
        VersionRow,
        [string, number, string | null, string, string, string, number | null, number | null, string, string]
      >(
        `INSERT INTO prompt_versions
           (prompt_id, version, system_template, user_template, variables, model, temperature, max_tokens, content_hash, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) RETURNING *`,
      ),
      getVersion: db.query<VersionRow, [string, number]>('SELECT * FROM prompt_versions WHERE prompt_id = ?1 AND version = ?2'),
      versions: db.query<VersionRow, [string]>('SELECT * FROM prompt_versions WHERE prompt_id = ?1 ORDER BY version'),
      publish: db.query<null, [string, number]>(
        `UPDATE prompts SET published_version = ?2
         WHERE id = ?1 AND EXISTS (SELECT 1 FROM prompt_versions WHERE prompt_id = ?1 AND version = ?2)`,
      ),
      setSourceFile: db.query<null, [string, string | null]>('UPDATE prompts SET source_file = ?2 WHERE id = ?1'),
      putPartial: db.query<null, [string, string, string, string]>(
        `INSERT INTO prompt_partials (org_id, name, template, updated_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (org_id, name) DO UPDATE SET template = ?3, updated_at = ?4`,
      ),
      partials: db.query<{ name: string; template: string }, [string]>(
        'SELECT name, template FROM prompt_partials WHERE org_id = ?1',
      ),
    }
  }

  async createPrompt(rec: { id: string; orgId: string; slug: string; name: string | undefined }): Promise<PromptRecord> {
    insertOnce(`prompt "${rec.slug}"`, () => this.q.insert.run(rec.id, rec.orgId, rec.slug, rec.name ?? null, new Date().toISOString()))
    return toPrompt(this.q.find.get(rec.orgId, rec.id) as PromptRow)
  }

  async findPrompt(orgId: string, idOrSlug: string): Promise<PromptRecord | undefined> {
    const row = this.q.find.get(orgId, idOrSlug)
    return row ? toPrompt(row) : undefined
  }

  async listPrompts(orgId: string): Promise<PromptRecord[]> {
    return this.q.list.all(orgId).map(toPrompt)
  }

  async addVersion(promptId: string, c: PromptVersionContent, contentHash: string, publish: boolean): Promise<PromptVersion> {
    return this.db.transaction(() => {
      const n = (this.q.nextVersion.get(promptId) as { n: number }).n
      const row = this.q.insertVersion.get(
        promptId,
        n,
        c.systemTemplate ?? null,
        c.userTemplate,
        JSON.stringify(c.variables),
        c.model,
        c.temperature ?? null,
        c.maxTokens ?? null,
        contentHash,
        new Date().toISOString(),
      )
      if (!row) throw new Error('insert returned nothing')
      if (publish) this.q.publish.run(promptId, n)
      return toVersion(row)
    })()
  }

  async getVersion(promptId: string, version: number): Promise<PromptVersion | undefined> {
    const row = this.q.getVersion.get(promptId, version)
    return row ? toVersion(row) : undefined
  }

  async listVersions(promptId: string): Promise<PromptVersion[]> {
    return this.q.versions.all(promptId).map(toVersion)
  }

  async publish(promptId: string, version: number): Promise<boolean> {
    return this.q.publish.run(promptId, version).changes > 0
  }

  async setSourceFile(promptId: string, sourceFile: string | undefined): Promise<void> {
    this.q.setSourceFile.run(promptId, sourceFile ?? null)
  }

  async putPartial(orgId: string, name: string, template: string): Promise<void> {
    this.q.putPartial.run(orgId, name, template, new Date().toISOString())
  }

  async getPartials(orgId: string): Promise<Map<string, string>> {
    return new Map(this.q.partials.all(orgId).map((r) => [r.name, r.template]))
  }
}
