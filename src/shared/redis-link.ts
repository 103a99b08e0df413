// The connection to Redis shared by every instance (GW_REDIS_URL): commands that fail fast instead of queueing, a subscriber that re-subscribes after a reconnect, and the health check.

import type { HealthCheck } from '../pipeline/context'

/** A command that has not answered within this counts as Redis being unreachable. */
const COMMAND_TIMEOUT_MS = 500

export class RedisUnavailableError extends Error {
  override name = 'RedisUnavailableError'
}

type Listener = (message: string) => void

export interface LuaScript {
  text: string
  sha: string
}

/** The counters kept in Redis (rate limits, budgets): what they do while it is away, and where their keys live. */
export interface RedisCountersOptions {
  /** GW_REDIS_REQUIRED: while Redis is away, the requests they count get 503 instead of this instance's own counters. */
  required: boolean
  /** Key prefix, so several gateways (or tests) can share one Redis. */
  prefix?: string
}

export const luaScript = (text: string): LuaScript => ({ text, sha: new Bun.CryptoHasher('sha1').update(text).digest('hex') })

export class RedisLink {
  private readonly client: Bun.RedisClient
  private readonly subscriber: Bun.RedisClient
  private readonly listeners = new Map<string, Listener>()
  private readonly reconnectHooks: (() => void)[] = []
  private lastError: string | undefined
  private subscribed = false
  private closed = false
  private warned = false

  constructor(
    private readonly url: string,
    private readonly opts: { onDown?: (why: string) => void; onUp?: () => void } = {},
  ) {
    const common = { autoReconnect: true, maxRetries: 4_294_967_295, connectionTimeout: 2000 }
    // No offline queue: while Redis is away a command fails at once, and the caller falls back.
    this.client = new Bun.RedisClient(url, { ...common, enableOfflineQueue: false })
    this.subscriber = new Bun.RedisClient(url, common)
    this.client.onconnect = () => this.up()
    this.client.onclose = (err) => this.down(err?.message ?? 'connection closed')
    // Subscriptions do not survive a reconnect: make them again, and tell the owners notices may have been missed.
    this.subscriber.onconnect = () => {
      if (!this.subscribed) return
      for (const [channel, fn] of this.listeners) void this.subscriber.subscribe(channel, fn).catch(() => {})
      for (const hook of this.reconnectHooks) hook()
    }
  }

  /** Connects both clients; resolves false (and keeps retrying in the background) when Redis does not answer. */
  async connect(): Promise<boolean> {
    try {
      await Promise.race([Promise.all([this.client.connect(), this.subscriber.connect()]), Bun.sleep(2000).then(() => Promise.reject(new Error('no answer within 2 s')))])
      return true
    } catch (err) {
      this.down(err instanceof Error ? err.message : String(err))
      this.retryConnect()
      return false
    }
  }

  get connected(): boolean {
    return this.client.connected
  }

  check(): HealthCheck {
    if (this.connected) return { status: 'ok' }
    this.down(this.lastError ?? 'not connected')
    return { status: 'down', message: `Redis unreachable: ${this.lastError}` }
  }

  /** One command; rejects with RedisUnavailableError when Redis is away or slow. */
  async send(command: string, args: string[]): Promise<unknown> {
    if (!this.client.connected) {
      // The client may be reconnecting without having reported the loss: this is where gw finds out.
      this.down(this.lastError ?? 'not connected')
      throw new RedisUnavailableError(this.lastError ?? 'not connected')
    }
    let timer: ReturnType<typeof setTimeout> | undefined
    try {
      return await Promise.race([
        this.client.send(command, args),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new RedisUnavailableError(`no answer within ${COMMAND_TIMEOUT_MS} ms`)), COMMAND_TIMEOUT_MS)
        }),
      ])
    } catch (err) {
      const code = (err as { code?: string }).code ?? ''
      if (err instanceof RedisUnavailableError || /^ERR_REDIS_(CONNECTION|SOCKET)/.test(code)) {
        const why = err instanceof Error ? err.message : String(err)
        this.down(why)
        throw err instanceof RedisUnavailableError ? err : new RedisUnavailableError(why, { cause: err })
      }
      throw err
    } finally {
      clearTimeout(timer)
    }
  }

  /** Runs a Lua script by its SHA-1, loading it with EVAL the first time a server has not seen it. */
  async eval(script: LuaScript, keys: readonly string[], args: readonly string[]): Promise<unknown> {
    try {
      return await this.send('EVALSHA', [script.sha, String(keys.length), ...keys, ...args])
    } catch (err) {
      if (!(err instanceof Error) || !/NOSCRIPT/.test(err.message)) throw err
      return this.send('EVAL', [script.text, String(keys.length), ...keys, ...args])
    }
  }

  async publish(channel: string, message: string): Promise<void> {
    await this.send('PUBLISH', [channel, message])
  }

  /** Listens on a channel for as long as the link lives (re-subscribed after every reconnect). */
  async subscribe(channel: string, fn: Listener): Promise<void> {
    this.listeners.set(channel, fn)
    this.subscribed = true
    if (this.subscriber.connected) await this.subscriber.subscribe(channel, fn)
  }

  /** Called after the subscriber reconnected: notices sent meanwhile were lost. */
  onReconnect(hook: () => void): void {
    this.reconnectHooks.push(hook)
  }

  close(): void {
    this.closed = true
    this.client.close()
    this.subscriber.close()
  }

  private up(): void {
    if (this.warned) this.opts.onUp?.()
    this.warned = false
    this.lastError = undefined
  }

  private down(why: string): void {
    if (this.closed) return
    this.lastError = why
    if (!this.warned) this.opts.onDown?.(why)
    this.warned = true
  }

  private retryConnect(): void {
    const again = () => {
      if (this.closed || (this.client.connected && this.subscriber.connected)) return
      Promise.all([this.client.connect(), this.subscriber.connect()]).then(
        () => {
          this.up()
          for (const [channel, fn] of this.listeners) void this.subscriber.subscribe(channel, fn).catch(() => {})
          for (const hook of this.reconnectHooks) hook()
        },
        () => setTimeout(again, 500).unref(),
      )
    }
    setTimeout(again, 500).unref()
  }
}
