// Module declarations for files Bun imports as text (SQL migrations).
declare module '*.sql' {
  const text: string
  export default text
}

// The Prometheus text parser the tests use (no bundled types): families as prom2json shapes them.
declare module 'parse-prometheus-text-format' {
  export default function parse(text: string): unknown[]
}
