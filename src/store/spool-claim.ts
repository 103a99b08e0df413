// The spool folder one instance owns (GW_SPOOL_DIR, or a folder of its own inside it when another live instance holds it), and the spool an instance left behind taken over.

import { closeSync, existsSync, openSync, readdirSync, readFileSync, renameSync, rmdirSync, rmSync, statSync, utimesSync, writeSync } from 'node:fs'
import { hostname } from 'node:os'
import { basename, join } from 'node:path'
import { segmentName, segmentsIn, sequenceAfter } from './log-spool'
import { makePrivateFolder } from './private-folder'

/** Who holds a spool folder: written in its OWNER file, whose time the holder renews every HEARTBEAT_MS. */
interface Owner {
  pid: number
  host: string
}

const OWNER = 'owner.json'
const HEARTBEAT_MS = 5_000
/** An owner file not renewed for this long is an instance's that is gone (on another host, or its pid reused). */
const STALE_MS = 30_000
/** Folders for further instances inside GW_SPOOL_DIR: `instance-2`, `instance-3`, … */
const INSTANCE = /^instance-(\d+)$/
/** Folders held by the instances of this process (tests run several gateways in one). */
const heldHere = new Set<string>()

export interface SpoolClaim {
  /** The folder this instance spools into. */
  readonly dir: string
  /** Stops holding it (at shutdown): another instance may take it, and its entries, from then on. */
  release(): void
}

/**
 * Claims a spool folder for this instance: `root` itself when no live instance holds it, else the first
 * `root/instance-<n>` none holds. Two instances never append to, replay and delete the same segments (one
 * could delete a segment the other had just appended to). The segments of folders no live instance holds
 * (an instance that crashed and was not started again) are moved into the claimed one, to be replayed
 * with its own: an entry spooled by any instance is written once some instance runs on the same root.
 */
export function claimSpool(root: string): SpoolClaim {
  const me: Owner = { pid: process.pid, host: hostname() }
  makePrivateFolder(root)
  let dir: string | undefined
  for (let n = 1; !dir; n++) {
    const candidate = n === 1 ? root : join(root, `instance-${n}`)
    if (take(candidate, me)) dir = candidate
  }
  for (const other of folders(root)) if (other !== dir && take(other, me)) adopt(other, dir)
  const owned = dir
  heldHere.add(owned)
  const heartbeat = setInterval(() => renew(owned, me), HEARTBEAT_MS)
  heartbeat.unref()
  let released = false
  return {
    dir: owned,
    release() {
      if (released) return
      released = true
      clearInterval(heartbeat)
      heldHere.delete(owned)
      give(owned, me)
      if (owned !== root) removeIfEmpty(owned)
    },
  }
}

/** `root` and the instance folders in it. */
function folders(root: string): string[] {
  const found = existsSync(root) ? readdirSync(root).filter((n) => INSTANCE.test(n) && statSync(join(root, n)).isDirectory()) : []
  return [root, ...found.map((n) => join(root, n))]
}

/** Takes `dir` if no live instance holds it; true when this instance now does. */
function take(dir: string, me: Owner): boolean {
  makePrivateFolder(dir)
  const path = join(dir, OWNER)
  if (create(path, me)) return true
  if (holder(dir) === 'live') return false
  // A stale owner is replaced under a takeover lock: of two instances that find it stale at once, one
  // replaces it and the other then finds the new owner live (or the lock held) and looks further.
  const lock = `${path}.takeover`
  if (!create(lock, me)) {
    // Held by another instance taking it over now, or left by one that crashed doing so (then cleared for the next start).
    if (ageMs(lock) > STALE_MS) rmSync(lock, { force: true })
    return false
  }
  try {
    if (holder(dir) === 'live') return false
    rmSync(path, { force: true })
    return create(path, me)
  } finally {
    rmSync(lock, { force: true })
  }
}

/** Milliseconds since `path` last changed (0 when it is gone). */
function ageMs(path: string): number {
  try {
    return Date.now() - statSync(path).mtimeMs
  } catch {
    return 0
  }
}

/** Creates the owner file, failing if one exists. */
function create(path: string, me: Owner): boolean {
  let fd: number
  try {
    fd = openSync(path, 'wx', 0o600)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false
    throw err
  }
  try {
    writeSync(fd, JSON.stringify(me))
  } finally {
    closeSync(fd)
  }
  return true
}

/**
 * Whether the owner file of `dir` names a live instance: on this host, a running process (this one only
 * for a folder an instance of this process holds: a container's gw is often pid 1 on every start), and
 * on any host, one that renewed it within STALE_MS.
 */
function holder(dir: string): 'live' | 'stale' {
  const path = join(dir, OWNER)
  if (!existsSync(path) || ageMs(path) > STALE_MS) return 'stale'
  let owner: Partial<Owner>
  try {
    owner = JSON.parse(readFileSync(path, 'utf8')) as Partial<Owner>
  } catch {
    // Being written by the instance that just created it (or torn by a crash: stale once not renewed).
    return 'live'
  }
  if (owner.host !== hostname()) return 'live'
  if (owner.pid === process.pid) return heldHere.has(dir) ? 'live' : 'stale'
  return typeof owner.pid === 'number' && running(owner.pid) ? 'live' : 'stale'
}

function running(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Renews the owner file's time (taken back if it went missing: a folder cleaned by hand). */
function renew(dir: string, me: Owner): void {
  const path = join(dir, OWNER)
  try {
    const now = new Date()
    utimesSync(path, now, now)
  } catch {
    create(path, me)
  }
}

/** Removes the owner file if it is still this instance's. */
function give(dir: string, me: Owner): void {
  const path = join(dir, OWNER)
  try {
    const owner = JSON.parse(readFileSync(path, 'utf8')) as Partial<Owner>
    if (owner.pid === me.pid && owner.host === me.host) rmSync(path, { force: true })
  } catch {
    // Gone already.
  }
}

/** Moves the segments of `from` (taken from a gone instance) after those of `into`, in their order, then gives `from` up. */
function adopt(from: string, into: string): void {
  let next = sequenceAfter(segmentsIn(into))
  for (const name of segmentsIn(from)) renameSync(join(from, name), join(into, segmentName(next++)))
  rmSync(join(from, OWNER), { force: true })
  if (INSTANCE.test(basename(from))) removeIfEmpty(from)
}

/** A further instance's folder left empty goes; one still holding something stays. */
function removeIfEmpty(dir: string): void {
  try {
    rmdirSync(dir)
  } catch {
    // Not empty (or gone): left as it is.
  }
}
