// Admin operations (PRODUCT §6), shared by the HTTP admin API and the `gw` CLI subcommands.

import { newServiceKey } from '../auth/service-keys'
import { badRequest, GatewayError, notFound } from '../errors'
import { toProviderId } from '../providers/provider-id'
import { checkOrgBody, checkPolicyBody, checkProviderBody, checkServiceKeyBody } from '../schemas/admin-bodies'
import type { Org, Policy, ProviderRecord, Store } from '../store/types'

const ORG_ID = /^[a-z0-9][a-z0-9_-]{0,63}$/

export function maskKey(key: string): string {
  return key.length <= 12 ? '****' : `${key.slice(0, 3)}…${key.slice(-4)}`
}

function publicProvider(p: ProviderRecord) {
  return { provider: p.provider, apiKey: maskKey(p.apiKey), baseUrl: p.baseUrl ?? null, enabled: p.enabled, updatedAt: p.updatedAt }
}

export class AdminService {
  constructor(
    private readonly store: Store,
    /** Called after every change to an org, so caches drop it. */
    private readonly changed: (orgId: string) => void = () => {},
  ) {}

  async requireOrg(orgId: string): Promise<Org> {
    const org = await this.store.orgs.getOrg(orgId)
    if (!org) throw notFound(`Org "${orgId}" not found`)
    return org
  }

  async createOrg(raw: unknown): Promise<{ id: string; name: string }> {
    const body = checkOrgBody(raw)
    const id = body.id ?? crypto.randomUUID()
    if (!ORG_ID.test(id)) throw badRequest(`Invalid org id "${id}": lowercase letters, digits, "-" and "_", at most 64`)
    if (await this.store.orgs.getOrg(id)) throw new GatewayError(409, 'gateway_error', `Org "${id}" already exists`)
    const org = await this.store.orgs.createOrg({ id, name: body.name })
    return { id: org.id, name: org.name }
  }

  async describeOrg(orgId: string) {
    const org = await this.requireOrg(orgId)
    const providers = await this.store.orgs.getProviders(orgId)
    const keys = await this.store.keys.listServiceKeys(orgId)
    return {
      id: org.id,
      name: org.name,
      createdAt: org.createdAt,
      policy: org.policy,
      providers: providers.map(publicProvider),
      serviceKeys: keys.map((k) => ({
        id: k.id,
        name: k.name ?? null,
        createdAt: k.createdAt,
        revokedAt: k.revokedAt ?? null,
        lastUsedAt: k.lastUsedAt ?? null,
      })),
    }
  }

  async putPolicy(orgId: string, raw: unknown): Promise<Policy> {
    await this.requireOrg(orgId)
    const policy = checkPolicyBody(raw)
    await this.store.orgs.putPolicy(orgId, policy)
    this.changed(orgId)
    return policy
  }

  async putProvider(orgId: string, providerName: string, raw: unknown) {
    await this.requireOrg(orgId)
    const provider = toProviderId(providerName)
    if (!provider) throw badRequest(`Unknown provider "${providerName}" (openai, anthropic, google, mistral)`)
    const body = checkProviderBody(raw)
    if (body.baseUrl !== undefined && !/^https?:\/\/[^/]/.test(body.baseUrl))
      throw badRequest(`Invalid baseUrl "${body.baseUrl}": expected an http(s) URL`)
    const rec = await this.store.orgs.putProvider(orgId, {
      provider,
      apiKey: body.apiKey,
      baseUrl: body.baseUrl?.replace(/\/+$/, ''),
      enabled: body.enabled ?? true,
    })
    this.changed(orgId)
    return publicProvider(rec)
  }

  async createServiceKey(orgId: string, raw: unknown = {}): Promise<{ id: string; key: string }> {
    await this.requireOrg(orgId)
    const body = checkServiceKeyBody(raw)
    const { id, key, hash } = newServiceKey()
    await this.store.keys.createServiceKey({ id, orgId, name: body.name, hash })
    return { id, key }
  }

  async revokeServiceKey(orgId: string, id: string): Promise<void> {
    await this.requireOrg(orgId)
    if (!(await this.store.keys.revokeServiceKey(orgId, id)))
      throw notFound(`Service key "${id}" not found in org "${orgId}" (or already revoked)`)
  }
}
