/**
 * The commit, from `POST /api/v1/commit` to COMMITTED (spec §4.2, reference.md):
 *
 * `begin` (while the request waits, so a refusal changes nothing the operator can see):
 * with `sourceAndDestination` write blocking the source is blocked first, so no user write can
 * follow the commit point; then the commit point is taken on the source (an `appendOplogNote`,
 * whose `operationTime` is after every write before it) and recorded (commit-store.ts).
 *
 * `finish` (in the background, state COMMITTING): change events are applied through the commit
 * point and application stops; every temporary characteristic is restored (restore.ts); the
 * destination's write blocking is lifted; the record says completed. A restore the destination
 * refuses (duplicates that forbid a unique index) is reported by namespace and index name in
 * progress warnings and the log, and retried every `retryIntervalMs` until it succeeds: the
 * commit never completes with a characteristic silently missing. Each stage is recorded before
 * the next, so a Ferry killed in COMMITTING finishes from where it was.
 */
import type { Timestamp } from 'bson';
import type { MongoClient } from 'mongodb';
import type { Logger } from '../log/logger.js';
import { NamespaceRecords } from '../meta/namespaces.js';
import type { MetadataStore } from '../meta/store.js';
import { CommitRecord, type CommitDocument } from './commit-store.js';
import { describeFailure, planRestore, runRestore } from './restore.js';
import { type StartRequest, blocksDestination, blocksSource } from '../domain/start-request.js';
import { describeTime } from '../domain/time.js';
import { setUserWriteBlocking, appendOplogNote } from '../cluster/commands.js';
import type { ClusterEndpoint } from '../domain/clusters.js';

export interface CommitContext {
  source: MongoClient;
  /** The source cluster, for errors. */
  sourceEndpoint: ClusterEndpoint;
  destination: MongoClient;
  store: MetadataStore;
  request: StartRequest;
  logger: Logger;
  /** How long to wait before retrying restores the destination refused (`FERRY_COMMIT_RETRY_INTERVAL_MS`). */
  retryIntervalMs: number;
}

export class CommitProcess {
  readonly #context: CommitContext;
  readonly #record: CommitRecord;
  #warnings: string[] = [];
  #stopping = false;
  #wake: (() => void) | undefined;

  constructor(context: CommitContext) {
    this.#context = context;
    this.#record = new CommitRecord(context.store);
  }

  /** Problems the commit is waiting on (restores refused), for progress. */
  get warnings(): string[] {
    return this.#warnings;
  }

  /** The recorded commit, if any. */
  read(): Promise<CommitDocument | null> {
    return this.#record.read();
  }

  /** Blocks the source if asked, takes and records the commit point (see the module comment). */
  async begin(): Promise<CommitDocument> {
    const { source, request, logger, store } = this.#context;
    const blockSource = blocksSource(request.enableUserWriteBlocking);
    if (blockSource) {
      await setUserWriteBlocking(source, true);
      logger.info('Commit: user writes on the source are now blocked');
    }
    try {
      const commitPoint = await appendOplogNote({ endpoint: this.#context.sourceEndpoint, client: source }, 'commit', store.instance);
      const doc = await this.#record.begin(commitPoint);
      logger.info({ commitPoint: describeTime(commitPoint) }, 'Commit: commit point recorded');
      return doc;
    } catch (error) {
      // The commit did not begin (the sync stays RUNNING): the application may write to the source again.
      if (blockSource) {
        await setUserWriteBlocking(source, false).catch((unblockError: unknown) =>
          logger.error(
            { err: unblockError },
            'Commit did not begin, and user writes on the source could not be unblocked: run setUserWriteBlockMode {global: false} on it',
          ),
        );
      }
      throw error;
    }
  }

  /**
   * Finishes a begun commit; `applyThrough` applies change events through the commit point and
   * stops application. Resolves once committed; rejects only if stopped or on an error that is
   * not a refused restore.
   */
  async finish(applyThrough: (commitPoint: Timestamp) => Promise<void>): Promise<void> {
    const { destination, source, request, logger, store } = this.#context;
    const doc = await this.#record.read();
    if (doc === null) throw new Error('the commit record has disappeared from the metadata');
    if (doc.appliedAt === undefined) {
      await applyThrough(doc.commitPoint);
      await this.#record.mark('appliedAt');
    }
    if (doc.restoredAt === undefined) {
      const records = new NamespaceRecords(store);
      for (;;) {
        const steps = await planRestore(source, destination, await records.list());
        const failures = await runRestore(destination, steps);
        this.#warnings = failures.map(describeFailure);
        for (const warning of this.#warnings) logger.error(warning);
        if (failures.length === 0) break;
        await this.#pause(this.#context.retryIntervalMs);
        if (this.#stopping) throw new Error('commit stopped before its restores succeeded');
      }
      logger.info('Commit: every temporary characteristic restored on the destination');
      await this.#record.mark('restoredAt');
    }
    if (blocksDestination(request.enableUserWriteBlocking)) {
      await setUserWriteBlocking(destination, false);
      logger.info('Commit: user writes on the destination are allowed again');
    }
    await this.#record.mark('completedAt');
  }

  /** Ends a waiting `finish` (shutdown); the record keeps where it was. */
  stop(): void {
    this.#stopping = true;
    this.#wake?.();
  }

  #pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.#wake = done;
    });
  }
}
