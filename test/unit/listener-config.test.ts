// Settings that cannot work together or never match are refused at start, each with the variable to fix:
// the admin listener on the API's port, half-set dashboard single sign-on, CORS origins a browser never sends.

import { expect, test } from 'bun:test'
import { loadConfig } from '../../src/config'

test('GW_ADMIN_PORT must differ from GW_PORT (0, any free port, for both is fine)', () => {
  expect(() => loadConfig({ GW_PORT: '18811', GW_ADMIN_PORT: '18811' })).toThrow(/GW_ADMIN_PORT \(18811\) must differ from GW_PORT/)
  expect(loadConfig({ GW_PORT: '18811', GW_ADMIN_PORT: '18812' }).adminListener).toEqual({ host: '127.0.0.1', port: 18812 })
  expect(loadConfig({ GW_PORT: '0', GW_ADMIN_PORT: '0' }).adminListener?.port).toBe(0)
})

test('dashboard single sign-on needs its issuer, client id and client secret together', () => {
  const sso = { GW_UI_OIDC_ISSUER: 'https://id.example.com', GW_UI_OIDC_CLIENT_ID: 'gw', GW_UI_OIDC_CLIENT_SECRET: 'a-client-secret' }
  expect(loadConfig(sso).uiOidcClientId).toBe('gw')
  const { GW_UI_OIDC_CLIENT_SECRET: _secret, ...half } = sso
  expect(() => loadConfig(half)).toThrow(/single sign-on needs GW_UI_OIDC_ISSUER, GW_UI_OIDC_CLIENT_ID, GW_UI_OIDC_CLIENT_SECRET together; missing: GW_UI_OIDC_CLIENT_SECRET/)
  let message = ''
  try {
    loadConfig({ GW_UI_OIDC_CLIENT_SECRET: 'a-client-secret' })
  } catch (err) {
    message = (err as Error).message
  }
  expect(message).toContain('missing: GW_UI_OIDC_ISSUER, GW_UI_OIDC_CLIENT_ID')
  expect(message).not.toContain('a-client-secret')
})

test('GW_CORS_ORIGINS entries are origins as browsers send them, or *', () => {
  expect(loadConfig({ GW_CORS_ORIGINS: 'https://app.example.com, http://localhost:5173/, *' }).corsOrigins).toEqual(['https://app.example.com', 'http://localhost:5173', '*'])
  for (const bad of ['app.example.com', 'https://app.example.com/path', 'ftp://files.example.com', 'https://app.example.com:443'])
    expect(() => loadConfig({ GW_CORS_ORIGINS: bad })).toThrow(/GW_CORS_ORIGINS entries must be origins/)
})
