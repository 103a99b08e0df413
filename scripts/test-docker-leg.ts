// The Docker leg of the test matrix: builds the image from the Dockerfile and runs it (test/smoke/docker-image.test.ts)
// on base images made from Debian packages (scripts/docker-prep.sh), so it needs no registry but npm's and Debian's.
// Skipped with one line when Docker cannot run here (no daemon and not root, no cgroups, …), also under CI=true.
// A dockerd this leg started is stopped at the end; one that was already running is left alone. The built image
// stays as gw-ci/gw:test (and its build stage as gw-ci/gw:test-build) so that the next run reuses its layers.

export {} // a module (top-level await)

const prep = Bun.spawn(['bash', 'scripts/docker-prep.sh'], { stdout: 'pipe', stderr: 'inherit' })
const vars = Object.fromEntries(
  (await new Response(prep.stdout).text())
    .split('\n')
    .map((line) => /^([A-Z_]+)=(.*)$/.exec(line))
    .filter((m) => m !== null)
    .map((m) => [m[1], m[2]]),
) as { BUILD_IMAGE?: string; RUNTIME_IMAGE?: string; DOCKERD_PID?: string }
const prepared = await prep.exited

async function stopDockerd(pid: number): Promise<void> {
  const alive = () => {
    try {
      process.kill(pid, 0)
      return true
    } catch {
      return false
    }
  }
  process.kill(pid, 'SIGTERM')
  for (let i = 0; i < 120 && alive(); i++) await Bun.sleep(250)
  if (alive()) console.error(`test-docker-leg: dockerd (pid ${pid}) still running 30 s after SIGTERM`)
}

let code = prepared === 2 ? 0 : prepared
try {
  if (prepared === 0) {
    const proc = Bun.spawn([process.execPath, 'test', '--timeout', '30000', 'test/smoke/docker-image.test.ts'], {
      env: { ...process.env, GW_TEST_DOCKER_BUILD_IMAGE: vars.BUILD_IMAGE, GW_TEST_DOCKER_RUNTIME_IMAGE: vars.RUNTIME_IMAGE },
      stdout: 'inherit',
      stderr: 'inherit',
    })
    code = await proc.exited
  }
} finally {
  if (vars.DOCKERD_PID) await stopDockerd(Number(vars.DOCKERD_PID))
}
process.exit(code)
