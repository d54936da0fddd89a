/**
 * The command line, defined with commander. Only flags actually given appear in the result, so
 * that values from `--config` and the defaults can fill in the rest (see config/resolve.ts).
 */
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { DEFAULTS } from '../config/options.js';
import type { RawOptions } from '../config/resolve.js';
import { VERBOSITY_LEVELS } from '../domain/constants.js';

const PACKAGE_JSON = new URL('../../../package.json', import.meta.url);

function version(): string {
  try {
    return (JSON.parse(readFileSync(PACKAGE_JSON, 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

export function buildProgram(): Command {
  return (
    new Command('ferry')
      .description('Copies a MongoDB cluster to another and keeps it current until cut-over; mongosync-compatible control API.')
      .version(version())
      .option('--cluster0 <uri>', 'connection string of the first cluster (required)')
      .option('--cluster1 <uri>', 'connection string of the second cluster (required)')
      .option('--config <file>', 'YAML file with any of these options (flags win)')
      .option('--port <port>', `control API port (default ${DEFAULTS.port})`)
      .option('--id <id>', `instance identifier (default "${DEFAULTS.id}")`)
      .option('--bindAddress <address>', `interface the API listens on (default ${DEFAULTS.bindAddress})`)
      .option('--loadLevel <1-4>', `how hard to push the clusters (default ${DEFAULTS.loadLevel})`)
      .option('--copyWorkers <n>', 'copy worker threads (default from --loadLevel)')
      .option('--batchesInFlight <n>', 'read batches in flight per copy worker (default from --loadLevel)')
      .option('--applyLanes <n>', 'parallel change-event lanes (default from --loadLevel)')
      .option('--batchBytes <bytes>', 'largest write batch in bytes (default from --loadLevel)')
      .option('--partitionSizeMB <MiB>', `copy partition size (default ${DEFAULTS.partitionSizeMB})`)
      .option('--logPath <dir>', 'write logs to <dir>/ferry.log instead of stdout')
      .option('--verbosity <level>', `${VERBOSITY_LEVELS.join(', ')} (default ${DEFAULTS.verbosity})`)
      .option('--disableVerification', 'accepted for mongosync compatibility (no embedded verifier in this build)')
      .allowExcessArguments(false)
      .exitOverride()
      // Errors are printed by main as one line; help and version still go to stdout.
      .configureOutput({ writeErr: () => {} })
  );
}

/** Parses `process.argv`-style arguments; throws commander's CommanderError on bad usage, help or version. */
export function parseFlags(argv: readonly string[]): RawOptions {
  const program = buildProgram();
  program.parse([...argv], { from: 'node' });
  return program.opts();
}
