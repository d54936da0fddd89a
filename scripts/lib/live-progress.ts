/**
 * Live progress of a sync in the terminal, fed with `GET /api/v1/progress` records: a bar of
 * copied bytes over the estimate, throughput, state, lag and events applied. On a terminal it is
 * a `cli-progress` bar redrawn in place, with notes printed above it; anywhere else (CI, a test,
 * a pipe) it prints a plain line every few seconds and whenever the state or phase changes.
 */
import cliProgress from 'cli-progress';
import type { Progress } from '../../test/e2e/ferry-process.js';

export interface LiveProgress {
  /** Shows a progress record. */
  update(progress: Progress): void;
  /** Prints a line of text (above the bar on a terminal). */
  note(line: string): void;
  /** Ends the display (the bar stays on screen as it last was). */
  stop(): void;
}

/** Options of `createLiveProgress`. */
export interface LiveProgressOptions {
  /** Where to write. Default process.stdout. */
  stream?: NodeJS.WriteStream;
  /** Draw a bar even if the stream is not a terminal (or plain lines even if it is). Default: the stream's `isTTY`. */
  interactive?: boolean;
  /** Least time between two plain lines with nothing new. Default 2000 ms. */
  plainIntervalMs?: number;
}

const MiB = 1024 * 1024;
/** Throughput is the bytes copied over the last few seconds, not since the start. */
const THROUGHPUT_WINDOW_MS = 3000;

/** The figures shown, from one progress record. */
interface Shown {
  copiedMB: number;
  totalMB: number;
  throughput: string;
  state: string;
  info: string;
  lag: string;
  events: number;
}

export function createLiveProgress(options: LiveProgressOptions = {}): LiveProgress {
  const stream = options.stream ?? process.stdout;
  const interactive = options.interactive ?? stream.isTTY === true;
  const samples: { at: number; bytes: number }[] = [];
  const started = Date.now();

  const figures = (progress: Progress): Shown => {
    const copy = progress.collectionCopy as { estimatedCopiedBytes: number; estimatedTotalBytes: number } | null;
    const copied = copy?.estimatedCopiedBytes ?? 0;
    const now = Date.now();
    samples.push({ at: now, bytes: copied });
    while (samples.length > 2 && samples[0]!.at < now - THROUGHPUT_WINDOW_MS) samples.shift();
    const first = samples[0]!;
    const seconds = (now - first.at) / 1000;
    const rate = seconds > 0 ? (copied - first.bytes) / MiB / seconds : 0;
    // Before the copy phase progress reports 0 of 1 byte: there is no estimate yet.
    const total = copy === null || copy === undefined || copy.estimatedTotalBytes <= 1 ? 0 : copy.estimatedTotalBytes;
    return {
      copiedMB: copied / MiB,
      totalMB: total / MiB,
      throughput: `${rate.toFixed(1)} MB/s`,
      state: progress.state,
      info: progress.info ?? '-',
      lag: progress.lagTimeSeconds === null || progress.lagTimeSeconds === undefined ? '-' : `${progress.lagTimeSeconds} s`,
      events: progress.totalEventsApplied ?? 0,
    };
  };

  if (interactive) {
    const bars = new cliProgress.MultiBar(
      {
        stream,
        format: '{bar} {percentage}% {copied}/{totalMB} MB | {throughput} | {state}: {info} | lag {lag} | {events} events',
        barsize: 20,
        hideCursor: true,
        forceRedraw: true,
      },
      cliProgress.Presets.shades_classic,
    );
    let bar: cliProgress.SingleBar | undefined;
    return {
      update(progress) {
        const shown = figures(progress);
        const payload = { ...shown, copied: shown.copiedMB.toFixed(1), totalMB: shown.totalMB > 0 ? shown.totalMB.toFixed(1) : '?' };
        const total = Math.max(shown.totalMB, shown.copiedMB, 0.001);
        if (bar === undefined) bar = bars.create(total, shown.copiedMB, payload);
        bar.setTotal(total);
        bar.update(shown.copiedMB, payload);
      },
      note(line) {
        if (bar === undefined) stream.write(`${line}\n`);
        else bars.log(`${line}\n`);
      },
      stop() {
        bars.stop();
      },
    };
  }

  const interval = options.plainIntervalMs ?? 2000;
  let lastLine = 0;
  let lastPhase = '';
  return {
    update(progress) {
      const shown = figures(progress);
      const phase = `${shown.state} ${shown.info}`;
      const now = Date.now();
      if (phase === lastPhase && now - lastLine < interval) return;
      lastPhase = phase;
      lastLine = now;
      const copied =
        shown.totalMB > 0
          ? `copied ${shown.copiedMB.toFixed(1)}/${shown.totalMB.toFixed(1)} MB ` +
            `(${Math.min(100, (shown.copiedMB / shown.totalMB) * 100).toFixed(0)}%)`
          : 'estimating the copy';
      stream.write(
        `[${((now - started) / 1000).toFixed(1).padStart(6)} s] ${shown.state} (${shown.info}) ${copied}, ` +
          `${shown.throughput}, lag ${shown.lag}, ${shown.events} events applied\n`,
      );
    },
    note(line) {
      stream.write(`${line}\n`);
    },
    stop() {},
  };
}
