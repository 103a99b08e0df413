#!/usr/bin/env bun
// Entry point of the `gw` binary: `gw serve` first gets the runtime settings Bun reads only at start
// (src/runtime-env.ts), before the gateway's code is loaded, then the command runs (src/cli/commands.ts).

import { isServeCommand } from './config'
import { execWithRuntimeDefaults } from './runtime-env'

const argv = Bun.argv.slice(2)
if (isServeCommand(argv)) execWithRuntimeDefaults()
const { runCommand } = await import('./cli/commands')
await runCommand(argv)
