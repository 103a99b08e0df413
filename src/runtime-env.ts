// Runtime settings that Bun reads from the environment only when the process starts: `gw serve`
// re-executes itself once with those the operator did not set (docs/benchmarks.md, "The allocator").

/** What `gw serve` wants from the runtime, each applied only when the environment has no value for it. */
export const RUNTIME_DEFAULTS: Readonly<Record<string, string>> = {
  // mimalloc, Bun's allocator for its own memory (sockets, buffers, strings), hands freed pages back
  // to the OS after 100 ms and at Bun's periodic collections. At a steady trickle of requests the
  // next requests fault them back in: 1.5–3 page faults and 30–70 µs of CPU per request on the one
  // core, measured. -1 keeps them: RSS stays at its high-water mark instead of shrinking when idle
  // (the peak is unchanged). An operator who wants memory back sets MIMALLOC_PURGE_DELAY=100, Bun's own.
  MIMALLOC_PURGE_DELAY: '-1',
}

/** The settings of RUNTIME_DEFAULTS that `env` lacks. */
export function missingRuntimeDefaults(env: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(RUNTIME_DEFAULTS).filter(([name]) => env[name] === undefined))
}

/**
 * The arguments that start this same program again. A compiled gw's argv[1] is its embedded entry
 * point, which the binary adds by itself; from source it is the script. Runtime flags (`--watch`,
 * `--cpu-prof`) are kept.
 */
function selfArgv(): string[] {
  const compiled = Bun.main.startsWith('/$bunfs/')
  return [process.execPath, ...process.execArgv, ...process.argv.slice(compiled ? 2 : 1)]
}

/**
 * Replaces the process (same pid, same stdio) with itself plus the missing runtime defaults, and so
 * never returns when it does; returns when nothing is missing or exec is refused, and gw then runs
 * without them.
 */
export function execWithRuntimeDefaults(env: Record<string, string | undefined> = process.env): void {
  const missing = missingRuntimeDefaults(env)
  if (Object.keys(missing).length === 0) return
  try {
    process.execve?.(process.execPath, selfArgv(), { ...env, ...missing })
  } catch {
    // A runtime without execve, or an executable that cannot be read again: serve as it is.
  }
}
