/**
 * JSON-lines logs shaped like mongosync's, written to `<logPath>/ferry.log` or stdout. Every line
 * passes through URI redaction on its way out, so a driver error quoting a connection string
 * cannot leak its password.
 *
 * The fields a log shipper parses carry mongosync's names: `level` (trace … panic), `time`
 * (RFC 3339, UTC), `message`, `mongosyncID` (the instance id), `serverID` (eight hex digits, new
 * for each process: tells one run's lines from another's), and for an error `error` (its message,
 * a string, as zerolog writes it) with `stack` where there is one. Ferry adds `errorCode` (its
 * catalogue code) beside `error`.
 *
 * Files are handled as mongosync handles them: a `ferry.log` left by an earlier run is renamed to
 * `ferry-<UTC time>.log` when Ferry starts (its first line then names that file), and SIGUSR1
 * renames the current file the same way and opens a new one. If the earlier file cannot be
 * renamed, Ferry appends to it, after a line that says so.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, statSync } from 'node:fs';
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
  /** This process's `serverID`. */
  serverID: string;
  /**
   * Renames `ferry.log` to `ferry-<UTC time>.log` and opens a new `ferry.log` (SIGUSR1). If the
   * file was already moved away (an external rotation), only opens a new one. Returns the path the
   * old file got, if it was renamed; nothing happens for stdout.
   */
  rotate(): string | undefined;
  /** A new verbosity, from the next line on. */
  setVerbosity(verbosity: Verbosity): void;
  /** Writes out anything buffered; call before exiting. */
  flush(): void;
}

/** `ferry-2026-06-17T16-27-58.187.log`: mongosync's rotated names, with Ferry's prefix. */
export function rotatedName(directory: string, at: Date = new Date()): string {
  const stamp = at.toISOString().replace(/:/g, '-').replace(/Z$/, '');
  let candidate = join(directory, `ferry-${stamp}.log`);
  for (let n = 1; existsSync(candidate); n++) candidate = join(directory, `ferry-${stamp}-${n}.log`);
  return candidate;
}

/** Renames a non-empty `file` aside; returns its new path, undefined when there was nothing to rename. */
function moveAside(directory: string, file: string): string | undefined {
  let size: number;
  try {
    size = statSync(file).size;
  } catch {
    return undefined; // no such file (or moved away already)
  }
  if (size === 0) return undefined;
  const to = rotatedName(directory);
  renameSync(file, to);
  return to;
}

interface SerializedError {
  message?: string;
  stack?: string;
  code?: unknown;
  type?: string;
}

/** An Error (or pino's serialized form of one) as mongosync's `error` string, Ferry's `errorCode` and `stack`. */
function errorFields(error: unknown): Record<string, unknown> {
  if (error === null || typeof error !== 'object') return { error: String(error) };
  const { message, stack, code } = error as SerializedError;
  const fields: Record<string, unknown> = { error: message ?? String(error) };
  if (typeof code === 'string' || typeof code === 'number') fields.errorCode = code;
  if (typeof stack === 'string') fields.stack = stack;
  return fields;
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
  const serverID = randomBytes(4).toString('hex');
  let target = 'stdout';
  let sink: ReturnType<typeof pino.destination>;
  let previousFile: string | undefined;
  let notRotated: string | undefined;
  if (options.logPath === undefined) {
    sink = pino.destination({ dest: 1, sync: true });
  } else {
    target = join(options.logPath, LOG_FILE_NAME);
    try {
      makeDirectory(options.logPath);
      try {
        previousFile = moveAside(options.logPath, target);
      } catch (error) {
        notRotated = (error as Error).message;
      }
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
      base: { mongosyncID: options.id, serverID },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: {
        level: (label) => ({ level: label }),
        log: (object) => {
          if (!('err' in object)) return object;
          const { err, ...rest } = object;
          return { ...rest, ...errorFields(err) };
        },
      },
    },
    redacting,
  );
  if (options.logPath !== undefined) {
    if (notRotated !== undefined) {
      logger.warn(
        { file: target, pid: process.pid, reason: notRotated },
        `Appending to ${LOG_FILE_NAME}, which an earlier run wrote: it could not be renamed aside`,
      );
    } else {
      logger.info({ file: target, pid: process.pid, previousFile }, 'Log file started');
    }
  }
  return {
    logger,
    target,
    serverID,
    rotate: () => {
      if (options.logPath === undefined) return undefined;
      let to: string | undefined;
      try {
        to = moveAside(options.logPath, target);
      } catch (error) {
        logger.error({ err: error, file: target }, 'Could not rotate the log file; still writing to it');
        return undefined;
      }
      sink.reopen();
      logger.info({ file: target, pid: process.pid, previousFile: to }, 'Log file rotated');
      return to;
    },
    setVerbosity: (verbosity) => {
      logger.level = verbosity.toLowerCase();
    },
    flush: () => sink.flushSync(),
  };
}
