// A second client for stall tests, in its own process so the test's own work (fakes, big bodies) is not
// measured: asks `<url>/health` every 2 ms until its stdin closes, then prints the longest gap (ms)
// between two answers. Run as `bun test/helpers/health-probe.ts <gateway url>`; see withHealthProbe.

export {}

const url = `${process.argv[2]}/health`
let running = true
let gapMs = 0
void (async () => {
  for await (const _ of Bun.stdin.stream()) {
    // Nothing is sent: the stream ends when the test closes stdin.
  }
  running = false
})()
// The first answer starts the clock.
await (await fetch(url)).arrayBuffer()
console.log('ready')
let last = performance.now()
while (running) {
  await (await fetch(url)).arrayBuffer()
  const now = performance.now()
  gapMs = Math.max(gapMs, now - last)
  last = now
  await Bun.sleep(2)
}
console.log(gapMs.toFixed(1))
