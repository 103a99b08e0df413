// GET /v1/models (the catalog models the caller's org can use, with the endpoints each serves) and
// GET /v1/models/{id} (one of them, as OpenAI's models.retrieve expects), in OpenAI's format.

import { endpointsServing } from '../../apis'
import type { ResolvedModel } from '../../catalog/catalog'
import { notFound } from '../../errors'
import { handleApiRequest } from '../../pipeline'
import { parseModelRef } from '../../pipeline/chat-input'
import type { AuthedContext, Deps } from '../../pipeline/context'
import type { Route } from '../../domain/org'
import { modelUnavailable } from '../../policy/model-access'
import { ModelDiscovery } from '../../providers/model-discovery'
import { PROVIDER_IDS } from '../../providers/provider-id'
import { kindOfRecord, kindSpec } from '../../providers/registry'
import { resolveModel } from '../../pipeline/3-route'
import { ModelAnswer, ModelList } from '../../schemas/admin-answers'
import { operationRoutes, ownOperations } from '../operation-routes'
import { contextFor } from '../request-context'

/** The endpoints a model serves, from their declarations. */
const endpointsOf = (m: ResolvedModel): string[] => endpointsServing(m.info.kind, m.provider)

const entry = (m: ResolvedModel) => ({ id: m.name, object: 'model', created: 0, owned_by: m.provider, endpoints: endpointsOf(m) })

/** An org's route, listed like a model (apps pick bare names such as `gpt-4o-mini` from here); owned by `gw`, with its targets. */
const routeEntry = (r: Route) => ({
  id: r.name,
  object: 'model',
  created: 0,
  owned_by: 'gw',
  endpoints: endpointsServing('chat'),
  route: { strategy: r.strategy, targets: r.targets.map((t) => t.model) },
})

function json(ctx: AuthedContext, body: unknown): Response {
  return new Response(JSON.stringify(body), {
    headers: { 'content-type': 'application/json', 'x-gw-auth-mode': ctx.identity.authMode },
  })
}

export const MODEL_OPERATIONS = ownOperations('client', [
  { id: 'listModels', method: 'GET', path: '/v1/models', summary: "The org's routes and the catalog models it can use, with the endpoints each serves", answer: ModelList },
  { id: 'getModel', method: 'GET', path: '/v1/models/*', summary: 'One model or route, by `provider/model` (one encoded segment or two) or route name', answer: ModelAnswer },
])

/** An OpenAI-compatible provider's model: its record's `models`, then what its own `GET /models` lists. */
const compatEntry = (provider: string, id: string) => ({ id: `${provider}/${id}`, object: 'model', created: 0, owned_by: provider, endpoints: endpointsServing('chat', 'openai') })

export const modelRoutes = (deps: Deps) => {
  const discovery = new ModelDiscovery(deps.fetch)
  /** The catalog's models of each provider of the org whose kind the catalog prices (Bedrock, Vertex AI, a priced preset), under its name (PRODUCT §17). */
  const kindEntries = (ctx: AuthedContext) =>
    [...ctx.org.providers.entries()].flatMap(([provider, keys]) => {
      const rec = keys.find((k) => k.enabled)
      const spec = kindSpec(kindOfRecord(rec, provider))
      return (spec.catalogIds?.(deps.catalog, provider) ?? []).flatMap((id) => {
        const ref = { provider, id, name: `${provider}/${id}` }
        if (modelUnavailable(ctx.org, ref)) return []
        const m = spec.resolve(deps.catalog, ref, rec)
        return [{ id: ref.name, object: 'model', created: 0, owned_by: provider, endpoints: endpointsServing(m.info.kind) }]
      })
    })
  /** Each OpenAI-compatible provider of the org the caller may use, with its models (PRODUCT §17). */
  const compatEntries = async (ctx: AuthedContext) => {
    const lists = [...ctx.org.providers.entries()].map(async ([provider, keys]) => {
      const rec = keys.find((k) => k.enabled && k.compat)
      if (!rec?.compat) return []
      // Azure: the record's models and deployments (its `GET /models` lists the resource's base models, not what it deploys).
      const found = rec.compat.azure ? Object.keys(rec.compat.azure.deployments) : await discovery.models(ctx.org.org.id, rec, rec.baseUrl ?? '')
      const ids = new Set([...rec.compat.models, ...found])
      return [...ids].map((id) => compatEntry(provider, id)).filter((e) => !modelUnavailable(ctx.org, { provider, name: e.id }))
    })
    return (await Promise.all(lists)).flat()
  }
  return operationRoutes('model-routes', MODEL_OPERATIONS, {
    listModels: ({ request, path }) =>
      handleApiRequest(deps, contextFor(request, path), async (authenticate) => {
        const ctx = await authenticate()
        const data: { id: string }[] = [...ctx.org.routes.values()].map(routeEntry)
        for (const provider of PROVIDER_IDS) for (const m of deps.catalog.list(provider)) if (!modelUnavailable(ctx.org, m)) data.push(entry(m))
        data.push(...kindEntries(ctx), ...(await compatEntries(ctx)))
        // A preset's model may be both in the catalog and in the upstream's own list: listed once.
        const unique = new Map<string, { id: string }>()
        for (const e of data) if (!unique.has(e.id)) unique.set(e.id, e)
        return json(ctx, { object: 'list', data: [...unique.values()] })
      }),
    getModel: ({ request, path, params }) =>
      handleApiRequest(deps, contextFor(request, path), async (authenticate) => {
        const ctx = await authenticate()
        // `provider/model`, sent as one encoded segment (the SDKs) or as two.
        const id = decodeURIComponent(params['*'] as string)
        const route = id.includes('/') ? undefined : ctx.org.routes.get(id)
        if (route) return json(ctx, routeEntry(route))
        const ref = parseModelRef(id)
        const m = resolveModel(deps.catalog, ctx.org, ref)
        const listed = ref.kind === 'openai-compatible' && (await compatEntries(ctx)).some((e) => e.id === ref.name)
        if (!(m.known || listed) || modelUnavailable(ctx.org, ref)) throw notFound(`The model "${id.slice(0, 64)}" does not exist or is not available to this org`)
        return json(ctx, entry(m))
      }),
  })
}
