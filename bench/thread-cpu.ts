// CPU time of a server process split by thread, from /proc/<pid>/task/<tid>/schedstat (nanoseconds):
// the serving thread (the main one, tid = pid), the Worker threads (the log thread, the WAL
// checkpointer, the read thread), JavaScriptCore's compiler threads, and the rest (GC helpers, …).

import { readdirSync, readFileSync } from 'node:fs'

export interface ThreadCpu {
  serving: number
  workers: number
  jit: number
  other: number
}

/** Which part a thread's CPU goes to, by its id and the name the kernel shows. */
function partOf(pid: number, tid: string, comm: string): keyof ThreadCpu {
  if (tid === String(pid)) return 'serving'
  if (comm.startsWith('Worker')) return 'workers'
  if (comm.startsWith('JITWorker')) return 'jit'
  return 'other'
}

/** Each thread's CPU so far, by thread id, with the part it belongs to. */
export function threadSnapshot(pid: number): Map<string, { part: keyof ThreadCpu; ns: number }> {
  const out = new Map<string, { part: keyof ThreadCpu; ns: number }>()
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const comm = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim()
      out.set(tid, { part: partOf(pid, tid, comm), ns: Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]) })
    } catch {} // the thread ended meanwhile
  }
  return out
}

/** CPU per part since `before`, in µs per request over `requests`. A thread that ended meanwhile drops out. */
export function threadCpuPerRequest(pid: number, before: Map<string, { ns: number }>, requests: number): ThreadCpu {
  const sum: ThreadCpu = { serving: 0, workers: 0, jit: 0, other: 0 }
  for (const [tid, t] of threadSnapshot(pid)) sum[t.part] += t.ns - (before.get(tid)?.ns ?? 0)
  const per = (ns: number) => Math.round(ns / 1000 / Math.max(1, requests))
  return { serving: per(sum.serving), workers: per(sum.workers), jit: per(sum.jit), other: per(sum.other) }
}
