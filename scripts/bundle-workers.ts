/**
 * `node dist/scripts/bundle-workers.js` (the last step of `npm run build`): replaces each compiled
 * worker entry point (dist/workers/*.js) with one file holding it and everything it imports.
 *
 * Why: a worker thread loads its modules afresh, and a sync starts three (copy, verifier, change
 * events). Unbundled, a worker's start cost ~180 ms of CPU, most of it finding, reading and
 * compiling the ~200 files of Ferry, the driver and their dependencies it imports; bundled, ~105 ms
 * (a bare worker thread: ~30). See bench/RESULTS.md for what that does to a copy's CPU.
 *
 * Left outside the bundle: piscina, whose worker bootstrap hands the task module its `workerData`
 * through piscina's own module state, and the driver's optional peers, which it requires only when
 * an option asks for them (and which are not installed).
 */
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const WORKERS = fileURLToPath(new URL('../workers/', import.meta.url));

/** What the bundles import at run time instead of holding. */
const EXTERNAL = [
  'piscina',
  'kerberos',
  'snappy',
  '@mongodb-js/zstd',
  'mongodb-client-encryption',
  'socks',
  'gcp-metadata',
  '@aws-sdk/credential-providers',
];

const entryPoints = readdirSync(WORKERS)
  .filter((name) => name.endsWith('.js'))
  .map((name) => WORKERS + name);

await build({
  entryPoints,
  outdir: WORKERS,
  allowOverwrite: true,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external: EXTERNAL,
  // The driver and its dependencies are CommonJS and require Node's modules at run time.
  banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
  // Stack traces still lead to the TypeScript sources (through tsc's maps) under --enable-source-maps.
  sourcemap: true,
  logLevel: 'warning',
});
