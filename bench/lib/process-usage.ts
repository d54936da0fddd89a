/**
 * CPU time and memory of other processes (Ferry, the baseline copier, the test clusters), read
 * from Linux's /proc so that each figure is that process's own, worker threads included:
 * `/proc/<pid>/stat` for user + system CPU time, `/proc/<pid>/status` for the resident set
 * (`VmRSS`) and its peak over the process's life (`VmHWM`).
 *
 * A `UsageSampler` reads every process it watches at a fixed interval and keeps the last reading,
 * so a figure survives the process exiting before the harness asks for it.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const MiB = 1024 * 1024;

/** Clock ticks per second of /proc's CPU times (`getconf CLK_TCK`; 100 on every common Linux). */
const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** One reading of a process. */
export interface ProcessUsage {
  /** User + system CPU seconds used since the process started (all its threads). */
  cpuSeconds: number;
  /** The part of `cpuSeconds` spent in the kernel (socket I/O, page faults...). */
  systemCpuSeconds: number;
  /** Resident memory now, MiB. */
  rssMB: number;
  /** Peak resident memory since the process started (VmHWM), MiB. */
  peakRssMB: number;
}

/** Reads a live process's usage; throws if it has exited (its /proc entry is gone). */
export function readProcessUsage(pid: number): ProcessUsage {
  // The command name (field 2) may hold spaces; the fields after its closing parenthesis do not.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of stat(5), 12 and 13 after the name.
  const cpuSeconds = (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  const systemCpuSeconds = Number(fields[12]) / CLOCK_TICKS;
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kB = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
  return { cpuSeconds, systemCpuSeconds, rssMB: (kB('VmRSS') * 1024) / MiB, peakRssMB: (kB('VmHWM') * 1024) / MiB };
}

/** What a watched process used between `watch` (or the last `restart`) and now. */
export interface UsageWindow {
  /** CPU seconds used in the window. */
  cpuSeconds: number;
  /** The part of `cpuSeconds` spent in the kernel. */
  systemCpuSeconds: number;
  /** Peak resident memory of the process's life so far (VmHWM), MiB. */
  peakRssMB: number;
  /** Largest resident memory seen by the sampler in the window, MiB. */
  maxSampledRssMB: number;
}

interface Watched {
  pid: number;
  start: ProcessUsage;
  last: ProcessUsage;
  maxSampledRssMB: number;
}

/** Samples the processes it watches every `intervalMs` (default 250) until `close()`. */
export class UsageSampler {
  readonly #watched = new Map<string, Watched>();
  readonly #timer: NodeJS.Timeout;

  constructor(intervalMs = 250) {
    this.#timer = setInterval(() => this.sample(), intervalMs);
    this.#timer.unref();
  }

  /** Starts watching `pid` under `name` (replacing an earlier process of that name). */
  watch(name: string, pid: number): void {
    const last = readProcessUsage(pid);
    this.#watched.set(name, { pid, start: last, last, maxSampledRssMB: last.rssMB });
  }

  /** Starts a new window for `name`: CPU counts from now, the sampled RSS maximum from now. */
  restart(name: string): void {
    const watched = this.#get(name);
    this.#read(watched);
    watched.start = watched.last;
    watched.maxSampledRssMB = watched.last.rssMB;
  }

  /** Reads every watched process now (a process that has exited keeps its last reading). */
  sample(): void {
    for (const watched of this.#watched.values()) this.#read(watched);
  }

  /** Usage of `name` in its current window, read now if the process is still alive. */
  usage(name: string): UsageWindow {
    const watched = this.#get(name);
    this.#read(watched);
    return {
      cpuSeconds: watched.last.cpuSeconds - watched.start.cpuSeconds,
      systemCpuSeconds: watched.last.systemCpuSeconds - watched.start.systemCpuSeconds,
      peakRssMB: watched.last.peakRssMB,
      maxSampledRssMB: watched.maxSampledRssMB,
    };
  }

  /** Stops watching `name`. */
  forget(name: string): void {
    this.#watched.delete(name);
  }

  close(): void {
    clearInterval(this.#timer);
  }

  #get(name: string): Watched {
    const watched = this.#watched.get(name);
    if (watched === undefined) throw new Error(`no process is watched as ${name}`);
    return watched;
  }

  #read(watched: Watched): void {
    try {
      watched.last = readProcessUsage(watched.pid);
      watched.maxSampledRssMB = Math.max(watched.maxSampledRssMB, watched.last.rssMB);
    } catch {
      // Exited: keep the last reading.
    }
  }
}
