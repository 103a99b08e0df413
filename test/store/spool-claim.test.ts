// The spool folder of each instance on one GW_SPOOL_DIR (src/store/spool-claim.ts): its own while another
// lives, taken back from an instance that is gone, whose spooled entries are kept and replayed once.

import { afterEach, describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import type { LogEntry } from '../../src/domain/log-entry'
import { LogSpool } from '../../src/store/log-spool'
import { claimSpool, type SpoolClaim } from '../../src/store/spool-claim'

const roots: string[] = []
const claims: SpoolClaim[] = []
afterEach(() => {
  for (const c of claims.splice(0)) c.release()
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true })
})
const newRoot = () => {
  const r = mkdtempSync(join(tmpdir(), 'gw-spool-claim-'))
  roots.push(r)
  return r
}
const claim = (root: string) => {
  const c = claimSpool(root)
  claims.push(c)
  return c
}
const entry = (id: string) => ({ requestId: id, orgId: 'o1' }) as LogEntry

/** A pid no process has now: a child that has exited. */
async function deadPid(): Promise<number> {
  const p = Bun.spawn(['true'])
  await p.exited
  return p.pid
}
const own = (dir: string, owner: { pid: number; host: string }, ageMs = 0) => {
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, 'owner.json'), JSON.stringify(owner))
  const at = new Date(Date.now() - ageMs)
  utimesSync(join(dir, 'owner.json'), at, at)
}

describe('spool folders on one GW_SPOOL_DIR', () => {
  test('a second instance gets a folder of its own; a replay by one never deletes what the other appends meanwhile', async () => {
    const root = newRoot()
    const a = claim(root)
    const b = claim(root)
    expect(a.dir).toBe(root)
    expect(b.dir).toBe(join(root, 'instance-2'))
    const spoolA = new LogSpool(a.dir)
    const spoolB = new LogSpool(b.dir)
    spoolA.append([entry('a1')])
    spoolB.append([entry('b1')])
    const stored: string[] = []
    // While A replays (its database back), B (whose own database is still away) spools more.
    await spoolA.replay(async (batch) => {
      stored.push(...batch.map((e) => e.requestId))
      spoolB.append([entry('b2')])
    }, 100)
    expect(stored).toEqual(['a1'])
    const replayedB: string[] = []
    await new LogSpool(b.dir).replay(async (batch) => void replayedB.push(...batch.map((e) => e.requestId)), 100)
    expect(replayedB).toEqual(['b1', 'b2'])
  })

  test('the folder of an instance that is gone is taken back with its entries: a dead pid on this host, or an owner file not renewed', async () => {
    const root = newRoot()
    own(root, { pid: await deadPid(), host: hostname() })
    new LogSpool(root).append([entry('left-1')])
    const c = claim(root)
    expect(c.dir).toBe(root)
    expect(new LogSpool(c.dir).size).toBe(1)
    c.release()
    own(root, { pid: 1, host: 'another-host' }, 60_000)
    expect(claim(root).dir).toBe(root)
  })

  test('an instance on another host that renews its owner file holds its folder', () => {
    const root = newRoot()
    own(root, { pid: 1, host: 'another-host' })
    expect(claim(root).dir).toBe(join(root, 'instance-2'))
  })

  test("the entries of a gone instance's folder move into the claimed one, after its own, and that folder goes", async () => {
    const root = newRoot()
    const live = claim(root)
    const gone = join(root, 'instance-3')
    own(gone, { pid: await deadPid(), host: hostname() })
    new LogSpool(gone).append([entry('g1'), entry('g2')])
    const c = claim(root)
    expect(c.dir).toBe(join(root, 'instance-2'))
    expect(existsSync(gone)).toBe(false)
    const replayed: string[] = []
    await new LogSpool(c.dir).replay(async (batch) => void replayed.push(...batch.map((e) => e.requestId)), 100)
    expect(replayed).toEqual(['g1', 'g2'])
    expect(live.dir).toBe(root)
  })

  test('a released folder is free again; an instance folder left empty is removed, one holding entries stays for the next', () => {
    const root = newRoot()
    const a = claim(root)
    const b = claim(root)
    b.release()
    expect(existsSync(b.dir)).toBe(false)
    const c = claim(root)
    expect(c.dir).toBe(b.dir)
    new LogSpool(c.dir).append([entry('c1')])
    c.release()
    expect(readdirSync(c.dir)).toEqual(['0000000000000001.jsonl'])
    a.release()
    // The next instance takes the root, and the entries left in instance-2 with it.
    const d = claim(root)
    expect(d.dir).toBe(root)
    expect(new LogSpool(d.dir).size).toBe(1)
  })
})

describe('taking over a stale folder', () => {
  test('only under the takeover lock: while another instance holds it, the folder is left to it; a lock left by a crash is cleared', async () => {
    const root = newRoot()
    own(root, { pid: await deadPid(), host: hostname() })
    writeFileSync(join(root, 'owner.json.takeover'), JSON.stringify({ pid: 1, host: hostname() }))
    expect(claim(root).dir).toBe(join(root, 'instance-2'))
    // The same lock, left for over 30 s by an instance that crashed while taking over: cleared, and the next start takes the root.
    const old = new Date(Date.now() - 60_000)
    utimesSync(join(root, 'owner.json.takeover'), old, old)
    expect(claim(root).dir).toBe(join(root, 'instance-3'))
    expect(existsSync(join(root, 'owner.json.takeover'))).toBe(false)
    expect(claim(root).dir).toBe(root)
  })

  test('an owner file being written (not yet JSON) counts as live until it is 30 s old', () => {
    const root = newRoot()
    mkdirSync(root, { recursive: true })
    writeFileSync(join(root, 'owner.json'), '')
    expect(claim(root).dir).toBe(join(root, 'instance-2'))
  })
})
