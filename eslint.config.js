// ESLint (flat config): typescript-eslint's recommended rules, no import cycles, and the floors of
// src/ as import boundaries. `ferryLintConfig(root)` is exported so that test/unit/lint-rules.test.ts
// can check the same rules on fixture files laid out under another root.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
// import-x 4.6 and the TypeScript resolver 3.8 are the last releases that resolve in plain JavaScript
// (enhanced-resolve); later ones need a native resolver whose other-platform builds the registry this
// project installs from lacks, which leaves package-lock.json out of step with `npm ci`.
import importXPlugin from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';

/**
 * The floors of src/, lowest first. A folder may import its own files and the folders of lower
 * floors, never a folder of its own floor or of a higher one: the ground floor (`domain`) imports
 * nothing of Ferry's, and a phase (`copy`, `cea`, `commit`, `recovery`, a later `verify` or
 * `reverse`) uses `plan` and what is below it, never another phase.
 */
export const FLOORS = [
  ['domain'], // vocabulary and constants: start request, namespaces, states, cluster names; imports nothing of Ferry's
  ['errors'], // the error catalogue
  ['bson', 'log', 'metrics'], // raw BSON; logs; histograms and counters
  ['cluster'], // the one way to a cluster: connect, commands, raw writes and reads, server errors, retries
  ['config', 'meta'], // the option table and the settings it gives; the metadata on the destination
  ['phase'], // the contract every phase implements, the context it gets and the thread pool it runs tasks in
  ['plan', 'guard', 'coordination'], // namespaces, preflight, destination preparation, partitions, planning; the guard; several instances
  ['copy', 'cea', 'commit', 'verify', 'reverse', 'recovery'], // the phases, and finding a recorded sync at startup
  ['sync'], // the orchestrator: sequences the phases
  ['state'], // the state machine and progress
  ['api'], // the control API
  ['cli'], // the `ferry` command and the composition of the phases
];

/** `import-x/no-restricted-paths` zones encoding FLOORS under `root`. */
function floorZones(root) {
  const zones = [];
  FLOORS.forEach((floor, level) => {
    const notBelow = FLOORS.slice(level).flat();
    for (const folder of floor) {
      const forbidden = notBelow.filter((other) => other !== folder);
      if (forbidden.length === 0) continue;
      zones.push({
        target: `${root}/src/${folder}`,
        from: forbidden.map((other) => `${root}/src/${other}`),
        message: `src/${folder} is on floor ${level} (eslint.config.js FLOORS): it may import only its own files and lower floors.`,
      });
    }
  });
  // Worker entry points run inside the copy and apply pools: they reach the phases, never what sequences them.
  zones.push({
    target: `${root}/workers`,
    from: ['sync', 'state', 'api', 'cli'].map((folder) => `${root}/src/${folder}`),
    message: 'workers/ are thread entry points of the phases: they may not import sync/, state/, api/ or cli/.',
  });
  return zones;
}

export function ferryLintConfig(root) {
  return tseslint.config(
    {
      ignores: ['dist/**', 'node_modules/**', 'bench/results/**'],
    },
    js.configs.recommended,
    ...tseslint.configs.recommended,
    {
      files: ['**/*.ts', '**/*.js'],
      plugins: { 'import-x': importXPlugin },
      languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', URL: 'readonly' } },
      settings: {
        // Parse TypeScript dependencies too (import-x's TypeScript preset), so cycles through .ts files are seen.
        ...importXPlugin.flatConfigs.typescript.settings,
        'import-x/resolver': undefined,
        'import-x/resolver-next': [createTypeScriptImportResolver({ project: `${root}/tsconfig.json`, alwaysTryTypes: true })],
      },
      rules: {
        'import-x/no-cycle': ['error', { ignoreExternal: true }],
        'import-x/no-restricted-paths': ['error', { zones: floorZones(root) }],
        '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
        'max-len': ['error', { code: 140, ignoreUrls: true, ignoreRegExpLiterals: true }],
      },
    },
    {
      // The status page runs in the browser, as plain scripts (no modules, no build step).
      files: ['status-page/**/*.js'],
      languageOptions: {
        sourceType: 'script',
        globals: Object.fromEntries(['window', 'document', 'location', 'fetch', 'setInterval', 'uPlot'].map((name) => [name, 'readonly'])),
      },
    },
    {
      // Only src/cluster/ builds clients, runs commands with driver options or reaches into the driver:
      // elsewhere the driver is used through its types (and the cluster layer's functions).
      files: ['src/**/*.ts', 'workers/**/*.ts'],
      ignores: ['src/cluster/**'],
      rules: {
        '@typescript-eslint/no-restricted-imports': [
          'error',
          {
            paths: [{ name: 'mongodb', message: 'Use src/cluster/ (connect, commands, server-error predicates).', allowTypeImports: true }],
            patterns: [{ group: ['mongodb/*'], message: "The driver's internals are reached only in src/cluster/." }],
          },
        ],
      },
    },
    {
      // mingo is bundled into test/cluster/mingo.ts at build time: a second, unbundled copy would
      // load ~300 modules at every test-cluster start and not share the bundle's classes.
      files: ['**/*.ts'],
      ignores: ['test/cluster/mingo.ts'],
      rules: {
        'no-restricted-imports': [
          'error',
          {
            paths: [{ name: 'mingo', message: 'Import mingo from test/cluster/mingo.ts.' }],
            patterns: [{ group: ['mingo/*'], message: 'Import mingo from test/cluster/mingo.ts.' }],
          },
        ],
      },
    },
    {
      // Tests build doubles of driver objects and read replies loosely. Their long strings are
      // messages (mongod's, verbatim, in the test cluster) and report lines: kept whole, so that
      // they can be searched for.
      files: ['test/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts'],
      rules: {
        '@typescript-eslint/no-explicit-any': 'off',
        'max-len': [
          'error',
          { code: 140, ignoreUrls: true, ignoreRegExpLiterals: true, ignoreStrings: true, ignoreTemplateLiterals: true },
        ],
      },
    },
  );
}

export default ferryLintConfig(import.meta.dirname);
