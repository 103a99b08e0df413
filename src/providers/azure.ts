// Azure OpenAI (PRODUCT §17, docs/providers.md "Azure OpenAI"): an OpenAI-wire provider with its own URL
// forms (the v1 API, or the deployment API with an api-version), its `api-key` header, and its content filter.

import type { ProviderKindSpec } from './adapter'
import { compatPlace, fitQuirks } from './openai-compatible'
import { isRecord } from './upstream-errors'

/** What an Azure record adds to the OpenAI wire. */
export interface AzureSettings {
  /** Model id → deployment name; a model not listed is deployed under its own id. */
  deployments: Record<string, string>
  /** Set: the deployment API (`/openai/deployments/{d}/…?api-version=`); unset: the v1 API (`/openai/v1/…`). */
  apiVersion: string | undefined
}

/** The resource's root (`https://<resource>.openai.azure.com`), also when given with `/openai` or `/openai/v1`. */
export function azureRoot(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, '').replace(/\/openai(\/v1)?$/, '')
}

/**
 * Where a request for `modelId` goes, and the `model` its body names (none on the deployment API: the URL names it).
 * The Responses API is not per deployment: `…/openai/v1/responses`, or `…/openai/responses?api-version=`, the deployment as `model`.
 */
export function azureEndpoint(baseUrl: string, az: AzureSettings, modelId: string, path: string): { url: string; model: string | undefined } {
  const deployment = Object.hasOwn(az.deployments, modelId) ? (az.deployments[modelId] as string) : modelId
  const root = azureRoot(baseUrl)
  if (az.apiVersion === undefined) return { url: `${root}/openai/v1/${path}`, model: deployment }
  if (path === 'responses') return { url: `${root}/openai/responses?api-version=${encodeURIComponent(az.apiVersion)}`, model: deployment }
  return { url: `${root}/openai/deployments/${encodeURIComponent(deployment)}/${path}?api-version=${encodeURIComponent(az.apiVersion)}`, model: undefined }
}

/** Azure's 400 for a prompt its content filter blocked: `error.code: "content_filter"` or `innererror.code: "ResponsibleAIPolicyViolation"`. */
export function isContentFilterError(e: Record<string, unknown> | undefined): boolean {
  if (!e) return false
  return e.code === 'content_filter' || (isRecord(e.innererror) && e.innererror.code === 'ResponsibleAIPolicyViolation')
}

/**
 * The `azure` kind: the OpenAI adapter at Azure's URLs with its `api-key` header (openAIEndpoint, openAIHeaders).
 * Azure serves OpenAI's models: a model id the catalog lists for openai takes its entry and price; it stays
 * unknown (`known: false`) like every org-named provider's, so metrics label it `other`.
 */
export const azureKind: ProviderKindSpec = {
  locate: (rec, name, _modelId, baseUrls) => compatPlace(rec, name, baseUrls.openai),
  resolve: (catalog, ref, rec) => {
    const m = catalog.resolve('openai', ref.id)
    return { ...m, name: ref.name, known: false, info: { ...m.info, price: rec?.compat?.price ?? (m.known ? m.info.price : null) } }
  },
  genAiName: () => 'azure.ai.openai',
  fit: fitQuirks,
}
