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

/** Whether the oplog holds (nearly) all it may: from then on, every new entry pushes the oldest out. */
export function oplogFull(window: OplogWindow): boolean {
  return window.maxSize <= 0 || window.size >= 0.95 * window.maxSize;
}

/**
 * Seconds until the entry at `needed` rolls off: the window from the oldest entry to `needed`,
 * plus, while the oplog is under 95% of its maximum, the time to fill the rest at `bytesPerSecond`
 * (by default its average growth over its span). 0 when `needed` is already older than the oldest entry.
 */
export function oplogSecondsRemaining(window: OplogWindow, needed: Timestamp, bytesPerSecond?: number): number {
  const oldest = window.first.getHighBits();
  if (needed.getHighBits() < oldest) return 0;
  const held = needed.getHighBits() - oldest;
  if (oplogFull(window)) return held;
  const span = window.last.getHighBits() - oldest;
  const rate = bytesPerSecond ?? (span > 0 ? window.size / span : 0);
  if (rate <= 0) return Number.POSITIVE_INFINITY;
  return held + (window.maxSize - window.size) / rate;
}

/** The warning for an oplog running short, or undefined. */
export function oplogWarning(seconds: number | undefined): string | undefined {
  if (seconds === undefined || seconds >= OPLOG_WARNING_SECONDS) return undefined;
  const left = describeOplogTime(seconds);
  // "about 20 minutes", but "less than 15 minutes" as it is.
  const amount = left.startsWith('less than') ? left : `about ${left}`;
  return (
    `The amount of available oplog on the source cluster is too small for Ferry to complete successfully: ` +
    `${amount} of oplog are left before the oldest change event Ferry still needs rolls off. ` +
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
  /** The last read, for the growth rate between two reads. */
  #previous: { at: number; size: number } | undefined;
  /** Whether the estimate rests on something measured (a full oplog, or growth between two reads). */
  #measured = false;

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

  /**
   * The warning to show, if any: only once the estimate rests on a measurement (a full oplog, or
   * its growth between two reads), not on its average growth since it began, which a bulk load
   * just before the sync makes look alarming.
   */
  get warning(): string | undefined {
    return this.#measured ? oplogWarning(this.#seconds) : undefined;
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
      const now = Date.now();
      const previous = this.#previous;
      this.#previous = { at: now, size: window.size };
      const full = oplogFull(window);
      const growth =
        !full && previous !== undefined && now > previous.at
          ? Math.max(0, (window.size - previous.size) / ((now - previous.at) / 1000))
          : undefined;
      const warned = this.warning !== undefined;
      this.#seconds = oplogSecondsRemaining(window, this.#needed(), growth);
      this.#measured = full || growth !== undefined;
      if (!warned && this.warning !== undefined) {
        this.#logger.warn({ estimatedOplogTimeRemaining: describeOplogTime(this.#seconds) }, this.warning);
      }
    } catch (error) {
      this.#logger.debug({ err: error }, "Could not read the source's oplog window");
    } finally {
      this.#checking = false;
    }
  }
}
