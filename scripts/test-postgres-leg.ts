// The PostgreSQL leg of the test matrix: the end-to-end suites again with GW_TEST_STORE=postgres (a fresh schema per
// gateway) and, when it answers, Redis for the counters and change notices (GW_TEST_WITH_REDIS=1).
// Skipped with one line when PostgreSQL is unreachable, except under CI=true, where that fails.

import { redisReachable, serversFor } from '../test/helpers/servers'

if (await serversFor('end-to-end suites on PostgreSQL (GW_TEST_STORE=postgres)', { postgres: true })) {
  const proc = Bun.spawn([process.execPath, 'test', '--timeout', '20000', 'test/e2e'], {
    env: { ...process.env, GW_TEST_STORE: 'postgres', GW_TEST_WITH_REDIS: (await redisReachable()) || process.env.CI === 'true' ? '1' : '0' },
    stdout: 'inherit',
    stderr: 'inherit',
  })
  process.exit(await proc.exited)
}
