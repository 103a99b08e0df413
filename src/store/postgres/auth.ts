// PostgreSQL storage of GwSigned signing secrets (encrypted at rest) and per-org OIDC configs.

import type { SQL } from 'bun'
import { type SecretBox, sealedFor } from '../../crypto/secret-box'
import { type OidcRow, type SecretRow, toOidc, toSecret } from '../rows'
import type { OidcConfig, SigningSecretRecord } from '../../domain/org'
import type { AuthStore } from '../types'
import { q } from './errors'

export class PgAuthStore implements AuthStore {
  constructor(
    private readonly sql: SQL,
    private readonly box: SecretBox,
  ) {}

  async addSigningSecret(rec: Omit<SigningSecretRecord, 'createdAt'>): Promise<SigningSecretRecord> {
    const [row] = await q<SecretRow[]>(
      this.sql`INSERT INTO signing_secrets (org_id, kid, secret_enc, created_at)
               VALUES (${rec.orgId}, ${rec.kid}, ${this.box.seal(rec.secret, sealedFor.signingSecret(rec.orgId, rec.kid))}, ${new Date().toISOString()}) RETURNING *`,
      `signing secret "${rec.kid}"`,
    )
    if (!row) throw new Error('insert returned nothing')
    return toSecret(this.box, row)
  }

  async listSigningSecrets(orgId: string): Promise<SigningSecretRecord[]> {
    const rows = await q<SecretRow[]>(this.sql`SELECT * FROM signing_secrets WHERE org_id = ${orgId} ORDER BY created_at, kid`)
    return rows.map((r) => toSecret(this.box, r))
  }

  async deleteSigningSecret(orgId: string, kid: string): Promise<boolean> {
    return (await q(this.sql`DELETE FROM signing_secrets WHERE org_id = ${orgId} AND kid = ${kid}`)).count > 0
  }

  async putOidc(rec: Omit<OidcConfig, 'updatedAt'>): Promise<OidcConfig> {
    const [row] = await q<OidcRow[]>(this.sql`
      INSERT INTO oidc_configs (org_id, issuer, audience, jwks_uri, org_claim, updated_at)
      VALUES (${rec.orgId}, ${rec.issuer}, ${rec.audience}, ${rec.jwksUri ?? null}, ${rec.orgClaim ?? null}, ${new Date().toISOString()})
      ON CONFLICT (org_id) DO UPDATE SET issuer = excluded.issuer, audience = excluded.audience,
        jwks_uri = excluded.jwks_uri, org_claim = excluded.org_claim, updated_at = excluded.updated_at
      RETURNING *`)
    if (!row) throw new Error('upsert returned nothing')
    return toOidc(row)
  }

  async getOidc(orgId: string): Promise<OidcConfig | undefined> {
    const [row] = await q<OidcRow[]>(this.sql`SELECT * FROM oidc_configs WHERE org_id = ${orgId}`)
    return row ? toOidc(row) : undefined
  }

  async oidcByIssuer(issuer: string): Promise<OidcConfig[]> {
    return (await q<OidcRow[]>(this.sql`SELECT * FROM oidc_configs WHERE issuer = ${issuer} ORDER BY org_id`)).map(toOidc)
  }
}
