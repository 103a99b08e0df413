// The `bedrock` provider kind (PRODUCT §17): where a record's requests go (its region's runtime endpoint), its catalog section, and its credentials put on each request (SigV4 or a Bedrock API key).

import type { ProviderKindSpec } from '../adapter'
import { bedrockBaseUrl } from './converse'
import { withBedrockAuth } from './request'
import { bedrockTarget, foundationModel } from './settings'

export const bedrockKind: ProviderKindSpec = {
  locate: (rec, name) => ({
    provider: 'bedrock',
    baseUrl: rec.baseUrl ?? bedrockBaseUrl(rec.bedrock?.region ?? 'us-east-1'),
    bedrock: bedrockTarget(name, rec),
  }),
  // Priced from the catalog's bedrock section; an inference profile (`us.`, `eu.`, `apac.`, `global.` before the model id) as its model.
  resolve: (catalog, ref) => ({ ...catalog.resolve('bedrock', foundationModel(ref.id)), id: ref.id, name: ref.name }),
  genAiName: () => 'aws.bedrock',
  catalogIds: (catalog) => catalog.list('bedrock').map((m) => m.id),
  // Signed per attempt (a retry on another key, or later, signs again).
  authorize: async (req, t) =>
    t.bedrock
      ? { ok: true, request: withBedrockAuth(req, t.bedrock.region, t.bedrock.auth, Date.now()) }
      : { ok: false, failure: { kind: 'provider_error', message: 'not a Bedrock provider' } },
}
