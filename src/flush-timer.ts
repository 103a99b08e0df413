// The timer of a write-behind queue (the log writer, the trace exporter): one pending flush at a time,
// a flush asked for now replaces a later one, and the timer never keeps the process alive.

export class FlushTimer {
  private timer: ReturnType<typeof setTimeout> | undefined

  constructor(private readonly flush: () => void) {}

  /** Flushes in `ms` (0: as soon as possible); a flush already due sooner is kept. */
  schedule(ms: number): void {
    if (this.timer !== undefined && ms > 0) return
    clearTimeout(this.timer)
    this.timer = setTimeout(() => {
      this.timer = undefined
      this.flush()
    }, ms)
    this.timer.unref()
  }

  cancel(): void {
    clearTimeout(this.timer)
    this.timer = undefined
  }
}
