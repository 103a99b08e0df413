// The client's address for per-address limits: the socket's peer, or X-Forwarded-For when the peer is a trusted proxy (GW_TRUSTED_PROXIES).

import { BlockList, isIP } from 'node:net'

/** What Elysia hands a handler as `server` (Bun's Server), as far as addresses go. */
export interface PeerSource {
  requestIP(request: Request): { address: string } | null
}

/** Parses `1.2.3.4`, `10.0.0.0/8`, `::1`, `fd00::/8`; undefined when it is none of these. */
function parseEntry(entry: string): { address: string; prefix: number; type: 'ipv4' | 'ipv6' } | undefined {
  const [address = '', bits, extra] = entry.split('/')
  const v = isIP(address)
  if (!v || extra !== undefined) return undefined
  const max = v === 4 ? 32 : 128
  const prefix = bits === undefined ? max : /^\d{1,3}$/.test(bits) ? Number(bits) : Number.NaN
  if (!(prefix >= 0 && prefix <= max)) return undefined
  return { address, prefix, type: v === 4 ? 'ipv4' : 'ipv6' }
}

/** Why a GW_TRUSTED_PROXIES entry is refused, or undefined. */
export const trustedProxyProblem = (entry: string): string | undefined =>
  parseEntry(entry) ? undefined : `GW_TRUSTED_PROXIES entries must be IP addresses or CIDR ranges, got "${entry.slice(0, 64)}"`

export class ClientAddresses {
  private readonly trusted = new BlockList()
  private readonly any: boolean

  constructor(trustedProxies: readonly string[]) {
    for (const e of trustedProxies) {
      const p = parseEntry(e)
      if (p) this.trusted.addSubnet(p.address, p.prefix, p.type)
    }
    this.any = trustedProxies.length > 0
  }

  private isTrusted(address: string): boolean {
    const v = isIP(address)
    return v !== 0 && this.trusted.check(address, v === 4 ? 'ipv4' : 'ipv6')
  }

  /**
   * The peer's address; when the peer is a trusted proxy, the right-most X-Forwarded-For hop that is
   * not itself a trusted proxy (each proxy appends the address it was reached from).
   */
  of(request: Request, server: PeerSource | null): string {
    const peer = server?.requestIP(request)?.address ?? 'unknown'
    if (!this.any || !this.isTrusted(peer)) return peer
    const hops = (request.headers.get('x-forwarded-for') ?? '').split(',').map((h) => h.trim())
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = hops[i] as string
      if (!isIP(hop)) return peer
      if (!this.isTrusted(hop)) return hop
    }
    return peer
  }
}
