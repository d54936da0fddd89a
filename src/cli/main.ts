#!/usr/bin/env node
/**
 * The `ferry` daemon. Startup: flags and config → checked options (a bad one ends here with a
 * one-line error and exit code 2, before anything is touched) → logger → control API listening
 * (progress reports INITIALIZING) → the sync recovers an earlier run with this `--id` → IDLE or
 * the recovered state. SIGINT/SIGTERM: close the API, let the sync record its state, exit 0.
 * A second signal exits at once (code 1). SIGUSR1: rotate the log file (renamed aside, a new one
 * opened). SIGHUP: read the config file again and apply the live options (src/config/reload.ts).
 */
// First: overwrites a password given as a flag before the rest of Ferry loads (command-line.ts).
import { SCRUBBED_AT_STARTUP } from './command-line.js';
import { CommanderError } from 'commander';
import { buildServer } from '../api/server.js';
import { type FerryOptions } from '../config/options.js';
import { reloadOptions } from '../config/reload.js';
import { resolveOptions, unknownEnvironmentVariables, type RawOptions } from '../config/resolve.js';
import { syncSettings } from '../config/settings.js';
import { createLogger, type LogHandle } from '../log/logger.js';
import { StateMachine } from '../state/machine.js';
import { createSync } from './compose.js';
import { parseFlags, version } from './flags.js';
import { startPeriodicWork } from './periodic.js';
import { ProgressHistory } from '../state/history.js';
import { metricFamilies } from '../state/metrics.js';
import { buildStatus, namespaceProgress } from '../state/status.js';
import { isLoopbackAddress } from '../domain/constants.js';
import { redactUris } from '../domain/credentials.js';
import { asFerryError, InvalidConfiguration } from '../errors/errors.js';
import { renderPrometheus } from '../metrics/prometheus.js';

/** Exit code for a bad command line, config file or connection string. */
const EXIT_USAGE = 2;
/** Exit code for a failure after startup checks passed (port taken, recovery failed...). */
const EXIT_FAILURE = 1;

function exitWithError(message: string, code: number): never {
  process.stderr.write(`ferry: error: ${redactUris(message).split('\n')[0]}\n`);
  process.exit(code);
}

function readOptions(argv: readonly string[]): { flags: RawOptions; options: FerryOptions } {
  try {
    const flags = parseFlags(argv);
    return { flags, options: resolveOptions(flags) };
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version end here too, successfully, their output already written.
      if (error.exitCode === 0) process.exit(0);
      exitWithError(`${error.message.replace(/^error: /, '')} (see ferry --help)`, EXIT_USAGE);
    }
    if (error instanceof InvalidConfiguration) exitWithError(error.message, error.exitCode ?? EXIT_USAGE);
    throw error;
  }
}

function openLog(options: FerryOptions): LogHandle {
  try {
    return createLogger(options);
  } catch (error) {
    exitWithError((error as Error).message, EXIT_USAGE);
  }
}

/** What the startup line says about the options: everything but the connection strings' secrets. */
function describeOptions(options: FerryOptions): Record<string, unknown> {
  return { ...options, cluster0: options.cluster0.address, cluster1: options.cluster1.address };
}

async function main(): Promise<void> {
  const { flags, options: startup } = readOptions(process.argv);
  let options = startup;
  const log = openLog(options);
  const { logger } = log;
  logger.info({ options: describeOptions(options) }, 'Ferry starting');
  if (SCRUBBED_AT_STARTUP) {
    logger.warn(
      'A connection string with a password was given on the command line, where every local user can read it ' +
        '(ps, /proc/<pid>/cmdline); Ferry has overwritten its command line, but not before it was visible. ' +
        'Put connection strings in --config (a file only you can read) or in FERRY_CLUSTER0 / FERRY_CLUSTER1 instead',
    );
  }
  const unknown = unknownEnvironmentVariables(process.env);
  if (unknown.length > 0) {
    logger.warn(
      { variables: unknown },
      `No option reads ${unknown.join(', ')}: a misspelt FERRY_ variable? (see the README's tuning table)`,
    );
  }
  if (!isLoopbackAddress(options.bindAddress)) {
    logger.warn(
      { bindAddress: options.bindAddress },
      'The control API has no authentication and listens beyond this machine: anyone who can reach it can start, commit or reverse a sync',
    );
  }

  const clusters = { cluster0: options.cluster0, cluster1: options.cluster1 };
  const sync = createSync(options, logger);
  const history = new ProgressHistory();
  const machine = new StateMachine({ sync, clusters, id: options.id, logger, history });
  const ferryVersion = version();
  const server = buildServer({
    machine,
    logger,
    metrics: () =>
      renderPrometheus({
        histograms: sync.histograms,
        counters: sync.counters(),
        families: metricFamilies(machine.progress(), sync.snapshot(), ferryVersion, options.id),
      }),
    status: {
      status: (since) => {
        const progress = machine.progress();
        return buildStatus({
          state: progress.state,
          canCommit: progress.canCommit,
          id: options.id,
          request: machine.request,
          clusters,
          snapshot: sync.snapshot(),
          timeline: machine.timeline(),
          samples: history.since(since),
        });
      },
      namespaces: () => namespaceProgress(sync.snapshot()),
    },
  });
  const stopPeriodicWork = startPeriodicWork({
    progress: () => machine.progress(),
    history,
    histograms: sync.histograms,
    pings: () => sync.snapshot().pingLatencyMs,
    logger,
    logIntervalMs: options.progressLogIntervalMs,
    metricsLogging: !options.disableMetricsLogging,
  });

  let stopping = false;
  const stop = async (signal: string): Promise<void> => {
    if (stopping) {
      // The operator insists (the sync may be waiting on an unreachable cluster): go now.
      logger.warn({ signal }, `Received ${signal} again: exiting without waiting for the sync to record its state`);
      log.flush();
      process.exit(EXIT_FAILURE);
    }
    stopping = true;
    stopPeriodicWork();
    logger.info({ signal }, `Received ${signal}: stopping`);
    try {
      // Refuse new requests at once; progress is still served while the sync records its state.
      const stopped = (async () => {
        const machineClosed = machine.close();
        await server.close();
        await machineClosed;
        return true;
      })();
      // Bounded: a cluster that does not answer must not hold the stop (the sync is crash-safe, so
      // what was in flight is redone from the metadata after a restart).
      const deadline = new Promise<false>((resolve) => setTimeout(() => resolve(false), options.stopTimeoutMs).unref());
      if (!(await Promise.race([stopped, deadline]))) {
        logger.warn(
          { stopTimeoutMs: options.stopTimeoutMs },
          `The sync did not reach a safe point within ${options.stopTimeoutMs} ms (a cluster not answering?): exiting without ` +
            'waiting longer; a restart redoes the work that was in flight from the metadata (FERRY_STOP_TIMEOUT_MS)',
        );
        log.flush();
        process.exit(EXIT_FAILURE);
      }
      logger.info('Stopped');
      log.flush();
      process.exit(0);
    } catch (error) {
      logger.fatal({ err: error }, 'Could not stop cleanly');
      log.flush();
      process.exit(EXIT_FAILURE);
    }
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGUSR1', () => {
    log.rotate();
  });
  process.on('SIGHUP', () => {
    try {
      const { options: next, applied, needRestart } = reloadOptions(options, flags);
      if (needRestart.length > 0) {
        logger.warn(
          { options: needRestart },
          `Configuration reloaded: ${needRestart.join(', ')} changed in the file but take effect only when Ferry restarts`,
        );
      }
      options = next;
      if (applied.length === 0) {
        logger.info('Configuration reloaded: no live option changed');
        return;
      }
      if (applied.some((change) => change.option === 'verbosity')) log.setVerbosity(options.verbosity);
      sync.retune(syncSettings(options));
      const changes = Object.fromEntries(applied.map(({ option, from, to }) => [option, { from, to }]));
      const said = applied.map(({ option, from, to }) => `${option} ${String(from)} → ${String(to)}`).join(', ');
      logger.info({ changes }, `Configuration reloaded: ${said} (applied from the next partition or batch)`);
    } catch (error) {
      logger.error({ err: error }, `Configuration reload refused, nothing changed: ${(error as Error).message}`);
    }
  });

  try {
    await server.listen({ port: options.port, host: options.bindAddress });
  } catch (error) {
    logger.fatal({ err: error }, 'The control API cannot listen');
    log.flush();
    exitWithError(`cannot listen on ${options.bindAddress}:${options.port}: ${(error as Error).message}`, EXIT_FAILURE);
  }
  const address = server.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : options.port;
  logger.info({ host: options.bindAddress, port }, `Control API listening on ${options.bindAddress}:${port}`);

  try {
    await machine.initialize();
  } catch (error) {
    // Named by its code: a wrong password is AuthenticationFailed, a sync run elsewhere SyncLeaseHeld.
    const failure = asFerryError(error);
    logger.fatal({ err: error, error: failure.code }, `Startup failed: ${failure.message}`);
    log.flush();
    exitWithError(`${failure.code}: ${failure.message}`, failure.exitCode ?? EXIT_FAILURE);
  }
}

process.on('uncaughtException', (error) => exitWithError(`unexpected failure: ${error.stack ?? error.message}`, EXIT_FAILURE));
process.on('unhandledRejection', (reason) => exitWithError(`unexpected failure: ${String(reason)}`, EXIT_FAILURE));

await main();
