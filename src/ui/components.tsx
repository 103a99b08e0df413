// Small building blocks shared by the dashboard's pages: data loading, errors, empty states, JSON, copy, forms.

import { type ComponentChildren, createContext } from 'preact'
import { useCallback, useContext, useEffect, useRef, useState } from 'preact/hooks'
import { ApiError } from './api'

export interface Loaded<T> {
  data: T | undefined
  error: string | undefined
  loading: boolean
  reload: () => void
}

/** Runs `load` when `deps` change; keeps the last data while reloading. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [data, setData] = useState<T>()
  const [error, setError] = useState<string>()
  const [loading, setLoading] = useState(true)
  const [tick, setTick] = useState(0)
  useEffect(() => {
    let live = true
    setLoading(true)
    load()
      .then((d) => live && (setData(d), setError(undefined)))
      .catch((e: unknown) => live && setError(messageOf(e)))
      .finally(() => live && setLoading(false))
    return () => {
      live = false
    }
  }, [...deps, tick])
  return { data, error, loading, reload: useCallback(() => setTick((t) => t + 1), []) }
}

export const messageOf = (e: unknown) =>
  e instanceof ApiError ? `${e.message}${e.requestId ? ` (request ${e.requestId})` : ''}` : e instanceof Error ? e.message : String(e)

/** Runs an action, turning its failure into a message shown next to the form. */
export function useAction(): [string | undefined, boolean, (fn: () => Promise<void>) => Promise<void>] {
  const [error, setError] = useState<string>()
  const [busy, setBusy] = useState(false)
  const run = async (fn: () => Promise<void>) => {
    setBusy(true)
    setError(undefined)
    try {
      await fn()
    } catch (e) {
      setError(messageOf(e))
    } finally {
      setBusy(false)
    }
  }
  return [error, busy, run]
}

export const ErrorNote = ({ error }: { error: string | undefined }) =>
  error ? (
    <p class="error" role="alert">
      {error}
    </p>
  ) : null

export function Empty({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <div class="empty">
      <strong>{title}</strong>
      {children}
    </div>
  )
}

export function Section({ title, children, actions }: { title: string; children: ComponentChildren; actions?: ComponentChildren }) {
  return (
    <section class="card">
      <header class="card-head">
        <h2>{title}</h2>
        {actions}
      </header>
      {children}
    </section>
  )
}

export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [done, setDone] = useState(false)
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text)
    } catch {
      // Clipboard refused (e.g. plain HTTP on another host): select the text instead.
      const range = document.createRange()
      const el = document.querySelector(`[data-copy="${CSS.escape(text)}"]`)
      if (el) {
        range.selectNodeContents(el)
        getSelection()?.removeAllRanges()
        getSelection()?.addRange(range)
      }
    }
    setDone(true)
    setTimeout(() => setDone(false), 1500)
  }
  return (
    <button type="button" class="secondary" onClick={copy}>
      {done ? 'Copied' : label}
    </button>
  )
}

/** A value shown once (a new key or secret), with a copy button. */
export function ShownOnce({ label, value, onDone }: { label: string; value: string; onDone: () => void }) {
  return (
    <div class="once" role="status">
      <p>
        <strong>{label}</strong> — shown only now; copy it and keep it somewhere safe.
      </p>
      <div class="row">
        <code class="secret" data-copy={value}>
          {value}
        </code>
        <CopyButton text={value} />
        <button type="button" class="secondary" onClick={onDone}>
          Done
        </button>
      </div>
    </div>
  )
}

/** JSON, pretty-printed (a string holding JSON is parsed first). */
export function JsonView({ value }: { value: unknown }) {
  let v = value
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v)
    } catch {}
  }
  return <pre class="json">{typeof v === 'string' ? v : JSON.stringify(v, null, 2)}</pre>
}

export function Field({ label, children, hint }: { label: string; children: ComponentChildren; hint?: string }) {
  return (
    <label class="field">
      <span>{label}</span>
      {children}
      {hint && <small>{hint}</small>}
    </label>
  )
}

export const fmtTime = (iso: string | number | null | undefined) => (iso == null ? '—' : new Date(iso).toLocaleString())
export const fmtMs = (ms: number | null | undefined) => (ms == null ? '—' : ms >= 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`)
export { fmtRemaining, fmtUsd } from './money'
export const fmtInt = (n: number | null | undefined) => (n == null ? '—' : n.toLocaleString())

/** Focus the first field of a form when it appears. */
export function useAutofocus<T extends HTMLElement>() {
  const ref = useRef<T>(null)
  useEffect(() => ref.current?.focus(), [])
  return ref
}

/** A form's submit button, with "Saved." once the last save went through. */
export function SubmitRow({ label, busy, saved }: { label: string; busy: boolean; saved: boolean }) {
  return (
    <div class="row end">
      <button type="submit" disabled={busy}>
        {label}
      </button>
      {saved && <span role="status">Saved.</span>}
    </div>
  )
}

/** What the signed-in person may do in the org on screen (from GET /admin/me): the server refuses the rest anyway. */
export interface Access {
  /** May change the org's settings (an owner, the admin token, or an admin of the org). */
  canChange: boolean
  /** May manage users (an owner or the admin token). */
  isOwner: boolean
}

export const AccessContext = createContext<Access>({ canChange: false, isOwner: false })

export const useAccess = () => useContext(AccessContext)

/** Its children only for someone who may change the org (a viewer sees no edit controls). */
export function IfCanChange({ children }: { children: ComponentChildren }) {
  return useAccess().canChange ? <>{children}</> : null
}

/** A table row's cell with its one destructive action (Remove, Delete, Forget), shown only to someone who may change the org. */
export function DangerCell({ label, aria, onClick }: { label: string; aria?: string; onClick: () => void }) {
  return (
    <td>
      <IfCanChange>
        <button type="button" class="danger" onClick={onClick} aria-label={aria}>
          {label}
        </button>
      </IfCanChange>
    </td>
  )
}
