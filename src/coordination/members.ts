/**
 * The coordination record of a migration run by several instances (`coordination` in the
 * metadata database, one document per instance, `_id` = its `--id`): the start request it got (as
 * `commandFingerprint` writes it), every instance it expects, whether it could commit now, and
 * the steps it has reached with when (the coordinator's steps carry its decisions, a packed BSON
 * value: the commit point). Every time in it is the destination's (`$$NOW`, `$currentDate`):
 * instances compare each other's times, and their hosts' clocks may differ. Each instance writes
 * only its own document, fenced by its own lease (src/meta/fence.ts): a stale process cannot
 * overwrite what a newer holder of its id decided.
 * Everyone reads everyone's, at majority.
 */
import type { Timestamp } from 'bson';
import type { CoordinationStep } from '../phase/contract.js';
import { InstanceCollection, packValue, unpackValue, type MetadataStore } from '../meta/store.js';

export interface MemberDocument {
  _id: string;
  instance: string;
  /** The start request it got, canonical (fingerprint.ts). */
  request: string;
  /** Every instance of the migration as it saw them at start (the source's shard IDs). */
  members: string[];
  /** Whether, as far as this instance goes, the migration could commit now. */
  ready: boolean;
  /** Steps reached: when, and the decision's value (packed) when it has one. */
  steps: Partial<Record<CoordinationStep, { at: Date; value?: string }>>;
  /** The last `pause` or `resume` it got, and when (by the destination's clock). */
  lastCommand?: { name: RunCommand; at: Date };
  /**
   * Every change event of its shard's stream with an earlier cluster time is applied to the
   * destination (coordination.ts, `awaitAppliedBefore`): its change-event application's watermark.
   */
  appliedBefore?: Timestamp;
  updatedAt: Date;
}

/** Commands that every instance must get, besides `start` and `commit` (which are steps). */
export type RunCommand = 'pause' | 'resume';

export class MemberRecords extends InstanceCollection<MemberDocument> {
  constructor(store: MetadataStore) {
    super(store, 'coordination');
  }

  /** Records this instance's start (a new migration: no step but `started`). */
  async register(request: string, members: readonly string[]): Promise<void> {
    // Replaced whole (an earlier migration's steps and command go), stamped by the destination's clock.
    await this.collection.updateOne(
      { _id: this.instance },
      [
        { $unset: ['steps', 'lastCommand'] },
        {
          $set: {
            instance: { $literal: this.instance },
            request: { $literal: request },
            members: { $literal: [...members] },
            ready: false,
            steps: { started: { at: '$$NOW' } },
            updatedAt: '$$NOW',
          },
        },
      ],
      { upsert: true },
    );
  }

  async reach(step: CoordinationStep, value?: unknown): Promise<void> {
    await this.collection.updateOne(
      { _id: this.instance },
      {
        ...(value === undefined ? {} : { $set: { [`steps.${step}.value`]: packValue(value) } }),
        $currentDate: { [`steps.${step}.at`]: true, updatedAt: true },
      },
    );
  }

  async command(name: RunCommand): Promise<void> {
    // The destination's clock: instances compare these times to find the latest command, and
    // their own clocks may differ.
    await this.collection.updateOne(
      { _id: this.instance },
      { $set: { 'lastCommand.name': name }, $currentDate: { 'lastCommand.at': true, updatedAt: true } },
    );
  }

  async setReady(ready: boolean): Promise<void> {
    await this.collection.updateOne({ _id: this.instance }, { $set: { ready, updatedAt: new Date() } });
  }

  async setAppliedBefore(time: Timestamp): Promise<void> {
    await this.collection.updateOne({ _id: this.instance }, { $set: { appliedBefore: time, updatedAt: new Date() } });
  }

  /** Every instance's document (its own included). */
  async all(): Promise<MemberDocument[]> {
    return (await this.collection.find({}).toArray()) as MemberDocument[];
  }
}

/** The value a step was reached with, unpacked (`{}` when it has none). */
export function stepValue(doc: MemberDocument, step: CoordinationStep): { value?: unknown } | undefined {
  const mark = doc.steps[step];
  if (mark === undefined) return undefined;
  return mark.value === undefined ? {} : { value: unpackValue(mark.value) };
}
