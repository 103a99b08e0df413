// Module declarations for files Bun imports as text (SQL migrations).
declare module '*.sql' {
  const text: string
  export default text
}
