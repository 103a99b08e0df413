// Request bodies of the people part of the admin API (PRODUCT §18): users, their tokens and passwords, service keys' scopes and rotation.

import { Type as t } from '@sinclair/typebox'
import { validator } from './chat-body'

const Role = t.Union([t.Literal('owner'), t.Literal('admin'), t.Literal('viewer')])
const OrgIds = t.Array(t.String({ pattern: '^[a-z0-9][a-z0-9_-]{0,63}$' }), { maxItems: 1000 })

export const UserBody = t.Object(
  {
    email: t.String({ pattern: '^[^\\s@]{1,128}@[^\\s@]{1,253}$' }),
    name: t.Optional(t.String({ minLength: 1, maxLength: 200 })),
    role: Role,
    orgs: t.Optional(OrgIds),
  },
  { additionalProperties: false, title: 'NewUser' },
)
export const checkUserBody = validator(UserBody)

export const UserPatchBody = t.Object(
  { name: t.Optional(t.Union([t.String({ minLength: 1, maxLength: 200 }), t.Null()])), role: t.Optional(Role), orgs: t.Optional(OrgIds) },
  { additionalProperties: false, title: 'UserChange' },
)
export const checkUserPatchBody = validator(UserPatchBody)

export const AdminTokenBody = t.Object({ name: t.Optional(t.String({ maxLength: 200 })) }, { additionalProperties: false, title: 'NewAdminToken' })
export const checkAdminTokenBody = validator(AdminTokenBody)

export const PasswordBody = t.Object({ password: t.String({ minLength: 12, maxLength: 1024 }) }, { additionalProperties: false, title: 'NewPassword' })
export const checkPasswordBody = validator(PasswordBody)

export const RotateKeyBody = t.Object(
  { graceSeconds: t.Optional(t.Integer({ minimum: 0, maximum: 30 * 86_400 })) },
  { additionalProperties: false, title: 'KeyRotation' },
)
export const checkRotateKeyBody = validator(RotateKeyBody)

export const KeyScopesBody = t.Object(
  {
    endpoints: t.Optional(t.Array(t.String({ pattern: '^/[\\x21-\\x7e]{0,200}$' }), { maxItems: 50 })),
    models: t.Optional(t.Array(t.String({ minLength: 1, maxLength: 200 }), { maxItems: 100 })),
  },
  { additionalProperties: false, title: 'KeyScopes' },
)

export const AuditQuery = t.Object(
  {
    org: t.Optional(t.String()),
    actor: t.Optional(t.String()),
    action: t.Optional(t.String()),
    since: t.Optional(t.String()),
    until: t.Optional(t.String()),
    limit: t.Optional(t.String()),
    cursor: t.Optional(t.String()),
  },
  { title: 'AuditQuery' },
)
