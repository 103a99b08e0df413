// `bun run build`: compiles gw into one self-contained executable, dist/gw (migrations, catalog and
// the example prompts inside; the log thread's module as a second entry point, see src/store/log-path.ts), with no .env or bunfig.toml picked up from wherever it is run.

import { $ } from 'bun'

const outfile = process.argv[2] ?? 'dist/gw'
const started = performance.now()
await $`${process.execPath} build ./src/main.ts ./src/store/log-thread.ts --compile --outfile ${outfile} --minify-whitespace --minify-syntax --asset ./prompts --no-compile-autoload-dotenv --no-compile-autoload-bunfig`.quiet()
const size = Bun.file(outfile).size
console.log(`built ${outfile} (${(size / 1024 / 1024).toFixed(1)} MB) in ${((performance.now() - started) / 1000).toFixed(1)} s`)
