/**
 * JSON-lines logs shaped like mongosync's (`time`, `level`, `mongosyncID`, `message`), written to
 * `<logPath>/ferry.log` or stdout. Every line passes through URI redaction on its way out, so a
 * driver error quoting a connection string cannot leak its password.
 */
import { mkdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { pino, type DestinationStream, type Logger as PinoLogger } from 'pino';
import type { Verbosity } from '../domain/constants.js';
import { redactUris } from '../domain/credentials.js';
import { InvalidConfiguration } from '../errors/errors.js';

export type Logger = PinoLogger<'panic'>;

export const LOG_FILE_NAME = 'ferry.log';

export interface LogOptions {
  /** Instance id, written into every line as `mongosyncID`. */
  id: string;
  verbosity: Verbosity;
  /** Directory of `ferry.log`; stdout when absent. */
  logPath?: string;
}

export interface LogHandle {
  logger: Logger;
  /** Where the log goes: the file path, or `stdout`. */
  target: string;
  /** Reopens the log file (after an external rotation moved it); nothing for stdout. */
  reopen(): void;
  /** Writes out anything buffered; call before exiting. */
  flush(): void;
}

/**
 * Creates `path` and its missing parents one at a time. Node's `mkdirSync(path, {recursive: true})`
 * retries forever where mkdir answers ENOENT under a parent that exists (`/proc/x`): a `--logPath`
 * there would spin at full CPU before the first line is written.
 */
function makeDirectory(path: string): void {
  const missing: string[] = [];
  for (let dir = resolve(path); ; dir = dirname(dir)) {
    try {
      if (!statSync(dir).isDirectory()) throw new Error(`${dir} is not a directory`);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || dir === dirname(dir)) throw error;
      missing.unshift(dir);
    }
  }
  for (const dir of missing) {
    try {
      mkdirSync(dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
}

export function createLogger(options: LogOptions): LogHandle {
  let target = 'stdout';
  let sink: ReturnType<typeof pino.destination>;
  if (options.logPath === undefined) {
    sink = pino.destination({ dest: 1, sync: true });
  } else {
    target = join(options.logPath, LOG_FILE_NAME);
    try {
      makeDirectory(options.logPath);
      // Synchronous: a line logged just before a crash must reach the file.
      sink = pino.destination({ dest: target, sync: true });
    } catch (error) {
      throw new InvalidConfiguration(`--logPath ${options.logPath} cannot be used: ${(error as Error).message}`);
    }
  }
  const redacting: DestinationStream = { write: (line: string) => sink.write(redactUris(line)) };
  const logger = pino<'panic'>(
    {
      level: options.verbosity.toLowerCase(),
      customLevels: { panic: 70 },
      messageKey: 'message',
      base: { mongosyncID: options.id },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    redacting,
  );
  return {
    logger,
    target,
    reopen: () => {
      if (options.logPath !== undefined) sink.reopen();
    },
    flush: () => sink.flushSync(),
  };
}
