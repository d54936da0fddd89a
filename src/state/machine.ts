/**
 * The one owner of Ferry's state. API requests and the sync's background events all pass
 * through one queue, so they take effect one at a time and in order: two simultaneous `start`
 * calls run one after the other, and the second finds the state RUNNING and is refused.
 * A refused or failed request leaves the state exactly as it was.
 */
import type { Logger } from '../log/logger.js';
import { buildProgress, type Progress } from './progress.js';
import type { ProgressHistory } from './history.js';
import { reversedRequest, type StartRequest } from '../domain/start-request.js';
import type { ClusterEndpoint } from '../domain/clusters.js';
import { redactUris } from '../domain/credentials.js';
import type { SyncEvent, SyncControl } from '../domain/sync-control.js';
import type { VerificationReport } from '../domain/verification.js';
import { COMMANDS, isTransition, type Command, type State } from '../domain/states.js';
import { describeFailure, InternalError, InvalidStateTransition, isFinal, NotReadyToCommit, NotReversible } from '../errors/errors.js';

export interface StateMachineOptions {
  /** The sync it drives (src/sync/orchestrator.ts). */
  sync: SyncControl;
  clusters: { cluster0: ClusterEndpoint; cluster1: ClusterEndpoint };
  /** This instance's id (`mongosyncID`). */
  id: string;
  logger: Logger;
  /** Recent progress, for `estimatedSecondsToCEACatchup` (the daemon samples it). */
  history?: ProgressHistory;
}

/** One change of state, when it happened (the status page's timeline). */
export interface StateChange {
  state: State;
  at: Date;
}

export class StateMachine {
  #state: State = 'INITIALIZING';
  #request: StartRequest | undefined;
  /** The states this process has been in, with when each began. */
  readonly #timeline: StateChange[] = [{ state: 'INITIALIZING', at: new Date() }];
  /** Why the sync stopped by itself, shown in progress until it runs again. */
  #failure: string | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  /** Set when shutdown begins: new requests are refused from then on. */
  #closing = false;
  /** Set once the sync is closed: its events no longer apply. */
  #closed = false;
  readonly #sync: SyncControl;
  readonly #options: StateMachineOptions;
  readonly #logger: Logger;

  constructor(options: StateMachineOptions) {
    this.#options = options;
    this.#sync = options.sync;
    this.#logger = options.logger;
    this.#sync.attach((event) => {
      void this.#serialize(() => this.#onSyncEvent(event)).catch((error: unknown) =>
        this.#logger.error({ err: error, event: event.type }, 'Could not handle a sync event'),
      );
    });
  }

  get state(): State {
    return this.#state;
  }

  /** The sync's start request in its current direction; undefined in IDLE. */
  get request(): StartRequest | undefined {
    return this.#request;
  }

  /** The states this process has been in, oldest first, with when each began. */
  timeline(): StateChange[] {
    return this.#timeline.map((change) => ({ ...change }));
  }

  /** The progress record; in-memory only, never waits (not even for the queue). */
  progress(): Progress {
    return buildProgress({
      state: this.#state,
      request: this.#request,
      clusters: this.#options.clusters,
      id: this.#options.id,
      snapshot: this.#sync.snapshot(),
      warnings: this.#failure === undefined ? [] : [this.#failure],
      ...(this.#options.history === undefined
        ? {}
        : { catchUpSeconds: (lag: number | null) => this.#options.history!.catchUpSeconds(Date.now(), lag) }),
    });
  }

  /** The verifier's report (reads the metadata; null in IDLE, before any sync). Changes nothing. */
  async verificationReport(skip: number, limit: number): Promise<VerificationReport | null> {
    if (this.#state === 'IDLE' || this.#state === 'INITIALIZING') return null;
    return this.#sync.verificationReport(skip, limit);
  }

  /** INITIALIZING → IDLE, or → the state of an earlier run with this id that the sync recovered. */
  initialize(): Promise<void> {
    return this.#serialize(async () => {
      this.#require('INITIALIZING', 'initialize');
      const recovered = await this.#sync.recover();
      if (recovered === undefined) {
        this.#moveTo('IDLE');
      } else {
        this.#request = recovered.request;
        this.#moveTo(recovered.state);
      }
    });
  }

  start(request: StartRequest): Promise<void> {
    return this.#command('start', async () => {
      await this.#sync.preflight(request);
      await this.#sync.start(request);
      this.#request = request;
      this.#moveTo(COMMANDS.start.to);
    });
  }

  pause(): Promise<void> {
    return this.#simple('pause', () => this.#sync.pause());
  }

  resume(): Promise<void> {
    return this.#simple('resume', async () => {
      await this.#sync.resume();
      this.#failure = undefined;
    });
  }

  commit(): Promise<void> {
    return this.#command('commit', async () => {
      if (!this.progress().canCommit) {
        throw new NotReadyToCommit(
          'commit is possible only once the copy has finished and change ' +
            'events are being applied with little lag (see canCommit in progress)',
        );
      }
      await this.#sync.commit();
      this.#moveTo(COMMANDS.commit.to);
    });
  }

  reverse(): Promise<void> {
    return this.#command('reverse', async () => {
      const request = this.#request!;
      if (!request.reversible || request.enableUserWriteBlocking !== 'sourceAndDestination') {
        throw new NotReversible(
          'reverse needs a sync started with reversible: true and enableUserWriteBlocking: true ("sourceAndDestination")',
        );
      }
      await this.#sync.reverse();
      this.#request = reversedRequest(request);
      this.#moveTo(COMMANDS.reverse.to);
    });
  }

  /**
   * Refuses new requests from now on, lets the request in progress finish, then closes the sync
   * (which records its state). Progress is still served meanwhile.
   */
  close(): Promise<void> {
    this.#closing = true;
    return this.#serialize(async () => {
      if (this.#closed) return;
      await this.#sync.close();
      this.#closed = true;
    });
  }

  #simple(command: 'pause' | 'resume', act: () => Promise<void>): Promise<void> {
    return this.#command(command, async () => {
      await act();
      this.#moveTo(COMMANDS[command].to);
    });
  }

  /**
   * Runs a request's task in the queue once its state is checked there. While INITIALIZING or
   * shutting down it is refused at once rather than queued behind recovery or the sync's close.
   */
  #command(command: Command, task: () => Promise<void>): Promise<void> {
    if (this.#state === 'INITIALIZING' || this.#closing) {
      try {
        this.#require(COMMANDS[command].from, command);
      } catch (error) {
        return Promise.reject(error);
      }
    }
    return this.#serialize(async () => {
      this.#require(COMMANDS[command].from, command);
      await task();
    });
  }

  #onSyncEvent(event: SyncEvent): void {
    const expected: Record<SyncEvent['type'], { from: readonly State[]; to: State }> = {
      commitCompleted: { from: ['COMMITTING'], to: 'COMMITTED' },
      reverseCompleted: { from: ['REVERSING'], to: 'RUNNING' },
      // An error the sync cannot continue from stops a commit too: never COMMITTING for ever.
      failed: { from: isFinal(event.type === 'failed' ? event.error : undefined) ? ['RUNNING', 'COMMITTING'] : ['RUNNING'], to: 'PAUSED' },
    };
    const { from, to } = expected[event.type];
    if (event.type === 'failed') {
      this.#logger.error({ err: event.error, state: this.#state }, 'The sync stopped on an error');
      const reason = redactUris(describeFailure(event.error));
      // The state, the message and the requests allowed agree: resume is offered only when it can work.
      this.#failure = isFinal(event.error)
        ? `The sync stopped and cannot continue, so resume and commit are refused (${event.error.code}): ${reason}`
        : this.#state === 'RUNNING'
          ? `The sync stopped on an error and is paused: ${reason}. Fix the cause, then POST /api/v1/resume.`
          : `The sync reported an error while ${this.#state}: ${reason}`;
    }
    if (this.#closed || !from.includes(this.#state)) {
      this.#logger.warn({ event: event.type, state: this.#state }, 'Sync event does not apply in this state; ignored');
      return;
    }
    this.#moveTo(to);
  }

  #require(from: State, command: Command | 'initialize'): void {
    if (this.#closing) throw new InvalidStateTransition(`${command} refused: Ferry is shutting down`);
    if (this.#state !== from) throw this.#refusal(command, from);
  }

  #refusal(command: Command | 'initialize', from: State): InvalidStateTransition {
    return new InvalidStateTransition(`${command} is allowed only in state ${from}; the current state is ${this.#state}`);
  }

  #moveTo(next: State): void {
    if (!isTransition(this.#state, next)) {
      // A bug, not a user error: the checks above should make this unreachable.
      throw new InternalError(`illegal transition ${this.#state} → ${next}`);
    }
    this.#logger.info({ from: this.#state, to: next }, `State ${this.#state} → ${next}`);
    this.#state = next;
    this.#timeline.push({ state: next, at: new Date() });
  }

  #serialize<T>(task: () => Promise<T> | T): Promise<T> {
    const result = this.#queue.then(task);
    this.#queue = result.catch(() => undefined);
    return result;
  }
}
