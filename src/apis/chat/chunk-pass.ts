// The chat endpoints' adapters: a chat client reads an OpenAI-style provider's chunks as the provider wrote them, so its stream goes on as bytes with only the model renamed.

import type { AdapterLookup } from '../../pipeline/5-fallback'
import type { ProviderAdapter } from '../../providers/adapter'
import { adapterFor } from '../../providers/registry'

const passing = new WeakMap<ProviderAdapter, ProviderAdapter>()

/** The adapter, its streams given the upstream's bytes where its translator can pass chunks on (OpenAIStyleStream.passBytes). */
function passingChunks(a: ProviderAdapter): ProviderAdapter {
  let p = passing.get(a)
  if (!p) {
    p = {
      ...a,
      createStream: (target, req) => {
        const s = a.createStream(target, req)
        if (s.passBytes) s.passesBytes = true
        return s
      },
    }
    passing.set(a, p)
  }
  return p
}

/**
 * The adapters of the endpoints whose answer is OpenAI's chat format (chat completions, prompt runs):
 * the registry's, OpenAI-style streams passed on as bytes (docs/architecture.md, "Stream paths"); when
 * the org's guardrails read the texts, the registry's own, every chunk read.
 */
export const CHAT_ADAPTERS: { adapters: AdapterLookup; translating: AdapterLookup } = {
  adapters: (wire) => passingChunks(adapterFor(wire)),
  translating: adapterFor,
}
