// Which tools a caller may see and call (PRODUCT §20): the org's allowed/denied globs, narrowed by the service key's own.

import { globMatch } from '../policy/model-access'
import type { ToolPolicy } from './records'

/** Why `tool` (`<server>__<tool>`) is refused under these policies, or undefined when it is allowed. */
export function toolRefusal(tool: string, policies: readonly (ToolPolicy | undefined)[]): string | undefined {
  for (const [i, p] of policies.entries()) {
    if (!p) continue
    const whose = i === 0 ? "the org's policy" : "the service key's policy"
    if (p.deniedTools?.some((g) => globMatch(g, tool))) return `tool "${tool}" is denied by ${whose}`
    if (p.allowedTools && !p.allowedTools.some((g) => globMatch(g, tool))) return `tool "${tool}" is not in the allowed tools of ${whose}`
  }
  return undefined
}

/** Separator of the gateway's tool and prompt names: `<server>__<name>` (server names never hold it). */
export const SEP = '__'

/** `<server>__<name>` → [server, name]; undefined when the name has no server prefix. */
export function splitName(full: string): [server: string, name: string] | undefined {
  const at = full.indexOf(SEP)
  return at > 0 ? [full.slice(0, at), full.slice(at + SEP.length)] : undefined
}
