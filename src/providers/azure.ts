// Azure OpenAI (PRODUCT §17, docs/providers.md "Azure OpenAI"): an OpenAI-wire provider with its own URL
// forms (the v1 API, or the deployment API with an api-version), its `api-key` header, and its content filter.

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

/** Where a request for `modelId` goes, and the `model` its body names (none on the deployment API: the URL names it). */
export function azureEndpoint(baseUrl: string, az: AzureSettings, modelId: string, path: string): { url: string; model: string | undefined } {
  const deployment = Object.hasOwn(az.deployments, modelId) ? (az.deployments[modelId] as string) : modelId
  const root = azureRoot(baseUrl)
  if (az.apiVersion === undefined) return { url: `${root}/openai/v1/${path}`, model: deployment }
  return { url: `${root}/openai/deployments/${encodeURIComponent(deployment)}/${path}?api-version=${encodeURIComponent(az.apiVersion)}`, model: undefined }
}

/** Azure's 400 for a prompt its content filter blocked: `error.code: "content_filter"` or `innererror.code: "ResponsibleAIPolicyViolation"`. */
export function isContentFilterError(e: Record<string, unknown> | undefined): boolean {
  if (!e) return false
  return e.code === 'content_filter' || (isRecord(e.innererror) && e.innererror.code === 'ResponsibleAIPolicyViolation')
}
