/**
 * How much of the source's oplog is left before the oldest entry change-event application still
 * needs rolls off: the early warning before ChangeStreamHistoryLost. mongosync reports it as
 * `estimatedOplogTimeRemaining`, "the time window between the oldest available oplog entry on
 * the source cluster and the oldest oplog entry that mongosync still needs", refreshed every five
 * minutes, as one of its strings ("12 hours", "45 minutes", "more than 72 hours", "less than 15
 * minutes", "not checked yet"). Ferry computes the same window, and adds, while the oplog is not
 * yet full, the time it takes to fill at the rate it grew over its span (before it is full nothing
 * rolls off). Read in the background (`OplogWatch`), never by a progress request.
 */
import type { Timestamp } from 'bson';
import type { MongoClient } from 'mongodb';
import { readOplogWindow, type OplogWindow } from '../cluster/monitoring.js';
import { describeOplogTime } from '../domain/oplog-time.js';
import type { Logger } from '../log/logger.js';

/** Below this much oplog left, `warnings` says so. */
export const OPLOG_WARNING_SECONDS = 3600;

/**
 * Seconds until the entry at `needed` rolls off: the window from the oldest entry to `needed`,
 * plus, while the oplog is under 95% of its maximum, the time to fill the rest at its average
 * growth. 0 when `needed` is already older than the oldest entry.
 */
export function oplogSecondsRemaining(window: OplogWindow, needed: Timestamp): number {
  const oldest = window.first.getHighBits();
  const window_ = Math.max(0, needed.getHighBits() - oldest);
  if (needed.getHighBits() < oldest) return 0;
  const full = window.maxSize <= 0 || window.size >= 0.95 * window.maxSize;
  if (full) return window_;
  const span = window.last.getHighBits() - oldest;
  if (span <= 0 || window.size <= 0) return Number.POSITIVE_INFINITY;
  const bytesPerSecond = window.size / span;
  return window_ + (window.maxSize - window.size) / bytesPerSecond;
}

/** The warning for an oplog running short, or undefined. */
export function oplogWarning(seconds: number | undefined): string | undefined {
  if (seconds === undefined || seconds >= OPLOG_WARNING_SECONDS) return undefined;
  return (
    `The amount of available oplog on the source cluster is too small for Ferry to complete successfully: about ` +
    `${describeOplogTime(seconds)} of oplog are left before the oldest change event Ferry still needs rolls off. ` +
    'Enlarge the source oplog (replSetResizeOplog) or let Ferry catch up (resume a paused sync); once it rolls off, ' +
    'the sync stops with ChangeStreamHistoryLost and must start again from the beginning.'
  );
}

/** Reads the source's oplog window now and every `intervalMs`, against the position `needed` says. */
export class OplogWatch {
  readonly #source: MongoClient;
  readonly #intervalMs: number;
  readonly #needed: () => Timestamp;
  readonly #logger: Logger;
  #timer: NodeJS.Timeout | undefined;
  #seconds: number | undefined;
  #checking = false;
  #warnedUnavailable = false;

  constructor(source: MongoClient, intervalMs: number, needed: () => Timestamp, logger: Logger) {
    this.#source = source;
    this.#intervalMs = intervalMs;
    this.#needed = needed;
    this.#logger = logger;
  }

  /** Seconds of oplog left at the last check; undefined before the first (or when it cannot be read). */
  get secondsRemaining(): number | undefined {
    return this.#seconds;
  }

  start(): void {
    if (this.#timer !== undefined) return;
    void this.#check();
    this.#timer = setInterval(() => void this.#check(), this.#intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  async #check(): Promise<void> {
    if (this.#checking) return;
    this.#checking = true;
    try {
      const window = await readOplogWindow(this.#source);
      if (window === undefined) {
        if (!this.#warnedUnavailable) {
          this.#warnedUnavailable = true;
          this.#logger.info(
            "The source's oplog cannot be read here (a sharded source?): estimatedOplogTimeRemaining stays not checked yet",
          );
        }
        return;
      }
      const seconds = oplogSecondsRemaining(window, this.#needed());
      const warning = oplogWarning(seconds) !== undefined && oplogWarning(this.#seconds) === undefined;
      this.#seconds = seconds;
      if (warning) this.#logger.warn({ estimatedOplogTimeRemaining: describeOplogTime(seconds) }, oplogWarning(seconds)!);
    } catch (error) {
      this.#logger.debug({ err: error }, "Could not read the source's oplog window");
    } finally {
      this.#checking = false;
    }
  }
}
