/**
 * End-to-end lag as an application would see it, measured from outside Ferry: a probe document
 * on the source gets a new sequence number every `intervalMs`; the time until the destination
 * holds that number is one lag sample. One probe is outstanding at a time, so under a large lag the
 * samples space out rather than pile up. The probe lives in its own namespace, which Ferry syncs
 * like any other (create it before the sync starts).
 */
import { performance } from 'node:perf_hooks';
import { MongoClient, type Collection } from 'mongodb';

/** Options of a `LagProbe`. */
export interface LagProbeOptions {
  sourceUri: string;
  destinationUri: string;
  /** Namespace of the probe document. Default `bench_probe.probe`. */
  db?: string;
  coll?: string;
  /** Time between two probes. Default 250 ms. */
  intervalMs?: number;
  /** Time between two reads of the destination while a probe is outstanding. Default 10 ms. */
  pollMs?: number;
}

interface ProbeDocument {
  _id: string;
  seq: number;
}

const PROBE_ID = 'probe';

export class LagProbe {
  readonly #options: LagProbeOptions;
  readonly #source: MongoClient;
  readonly #destination: MongoClient;
  #samples: number[] = [];
  #seq = 0;
  #running: Promise<void> | undefined;
  #stopping = false;
  #failure: Error | undefined;

  constructor(options: LagProbeOptions) {
    this.#options = options;
    this.#source = new MongoClient(options.sourceUri);
    this.#destination = new MongoClient(options.destinationUri);
  }

  #collection(client: MongoClient): Collection<ProbeDocument> {
    return client.db(this.#options.db ?? 'bench_probe').collection<ProbeDocument>(this.#options.coll ?? 'probe');
  }

  /** Creates the probe document on the source (before the sync starts, so that it is copied). */
  async prepare(): Promise<void> {
    await this.#collection(this.#source).insertOne({ _id: PROBE_ID, seq: 0 });
  }

  /** Writes one probe and waits until the destination holds it; returns the lag in ms. */
  async probeOnce(timeoutMs = 120_000): Promise<number> {
    const seq = ++this.#seq;
    const written = performance.now();
    await this.#collection(this.#source).updateOne({ _id: PROBE_ID }, { $set: { seq } });
    const target = this.#collection(this.#destination);
    for (;;) {
      const found = await target.findOne({ _id: PROBE_ID });
      const now = performance.now();
      if (found !== null && found.seq >= seq) return now - written;
      if (now - written > timeoutMs) throw new Error(`probe ${seq} did not reach the destination within ${timeoutMs / 1000} s`);
      await new Promise((resolve) => setTimeout(resolve, this.#options.pollMs ?? 10));
    }
  }

  /** Starts probing in the background. */
  start(): void {
    this.#stopping = false;
    this.#running = (async () => {
      while (!this.#stopping) {
        const started = performance.now();
        this.#samples.push(await this.probeOnce());
        const wait = (this.#options.intervalMs ?? 250) - (performance.now() - started);
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      }
    })().catch((error: unknown) => {
      this.#failure = error as Error;
    });
  }

  /** Lag samples (ms) since the last `takeSamples`, and starts a new set; throws if probing failed. */
  takeSamples(): number[] {
    if (this.#failure !== undefined) throw this.#failure;
    const samples = this.#samples;
    this.#samples = [];
    return samples;
  }

  /**
   * Like `takeSamples`, but a window in which no probe came back yet (the lag is longer than the
   * window, as on a loaded machine) waits for the outstanding probe: it was written during the
   * window, and its lag is the window's figure. An empty window would report no lag at all.
   */
  async takeWindowSamples(): Promise<number[]> {
    while (this.#samples.length === 0 && this.#running !== undefined && this.#failure === undefined) {
      await new Promise((resolve) => setTimeout(resolve, this.#options.pollMs ?? 10));
    }
    return this.takeSamples();
  }

  /** Stops probing after the outstanding probe. */
  async stop(): Promise<void> {
    this.#stopping = true;
    await this.#running;
    this.#running = undefined;
  }

  async close(): Promise<void> {
    await this.stop().catch(() => undefined);
    await Promise.all([this.#source.close(), this.#destination.close()]);
  }
}
