// SQLite storage of GwSigned signing secrets (encrypted at rest) and per-org OIDC configs.

import type { Database } from 'bun:sqlite'
import { type SecretBox, sealedFor } from '../../crypto/secret-box'
import { type OidcRow, type SecretRow, toOidc, toSecret } from '../rows'
import type { OidcConfig, SigningSecretRecord } from '../../domain/org'
import type { AuthStore } from '../types'
import { insertOnce } from './errors'

export class SqliteAuthStore implements AuthStore {
  private readonly q
  constructor(
    db: Database,
    private readonly box: SecretBox,
  ) {
    this.q = {
      addSecret: db.query<SecretRow, [string, string, string, string]>(
        'INSERT INTO signing_secrets (org_id, kid, secret_enc, created_at) VALUES (?1, ?2, ?3, ?4) RETURNING *',
      ),
      secrets: db.query<SecretRow, [string]>('SELECT * FROM signing_secrets WHERE org_id = ?1 ORDER BY created_at, kid'),
      deleteSecret: db.query<null, [string, string]>('DELETE FROM signing_secrets WHERE org_id = ?1 AND kid = ?2'),
      putOidc: db.query<OidcRow, [string, string, string, string | null, string | null, string]>(
        `INSERT INTO oidc_configs (org_id, issuer, audience, jwks_uri, org_claim, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (org_id) DO UPDATE SET issuer = ?2, audience = ?3, jwks_uri = ?4, org_claim = ?5, updated_at = ?6
         RETURNING *`,
      ),
      getOidc: db.query<OidcRow, [string]>('SELECT * FROM oidc_configs WHERE org_id = ?1'),
      byIssuer: db.query<OidcRow, [string]>('SELECT * FROM oidc_configs WHERE issuer = ?1 ORDER BY org_id'),
    }
  }

  async addSigningSecret(rec: Omit<SigningSecretRecord, 'createdAt'>): Promise<SigningSecretRecord> {
    const row = insertOnce(`signing secret "${rec.kid}"`, () =>
      this.q.addSecret.get(rec.orgId, rec.kid, this.box.seal(rec.secret, sealedFor.signingSecret(rec.orgId, rec.kid)), new Date().toISOString()),
    )
    if (!row) throw new Error('insert returned nothing')
    return toSecret(this.box, row)
  }

  async listSigningSecrets(orgId: string): Promise<SigningSecretRecord[]> {
    return this.q.secrets.all(orgId).map((r) => toSecret(this.box, r))
  }

  async deleteSigningSecret(orgId: string, kid: string): Promise<boolean> {
    return this.q.deleteSecret.run(orgId, kid).changes > 0
  }

  async putOidc(rec: Omit<OidcConfig, 'updatedAt'>): Promise<OidcConfig> {
    const row = this.q.putOidc.get(
      rec.orgId,
      rec.issuer,
      rec.audience,
      rec.jwksUri ?? null,
      rec.orgClaim ?? null,
      new Date().toISOString(),
    )
    if (!row) throw new Error('upsert returned nothing')
    return toOidc(row)
  }

  async getOidc(orgId: string): Promise<OidcConfig | undefined> {
    const row = this.q.getOidc.get(orgId)
    return row ? toOidc(row) : undefined
  }

  async oidcByIssuer(issuer: string): Promise<OidcConfig[]> {
    return this.q.byIssuer.all(issuer).map(toOidc)
  }
}
