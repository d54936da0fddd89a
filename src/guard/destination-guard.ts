/**
 * Noticing that something other than Ferry changed what Ferry owns on the destination: its
 * metadata (the lease, the resume document) and the collections and views it created. Nothing
 * else may touch them during a sync (the destination is write-blocked for users without
 * `bypassWriteBlockingMode`), so any such change means the destination no longer holds what Ferry
 * built, and committing over it would report COMMITTED over a wrong destination.
 *
 * How: by the identity Ferry recorded, checked at the moments that matter (at every launch of the
 * sync, when the initial copy enters each part, before commit begins and before it completes) and
 * every `guardIntervalMs` while the sync runs or commits:
 * - the lease is still this process's (its record gone: the metadata database was dropped, or the
 *   destination restarted empty);
 * - the resume document is the one this sync created (same creation time);
 * - every namespace recorded as created exists on the destination, as a collection or a view as
 *   recorded, with the collection UUID it had when Ferry first saw it after creating it (a drop,
 *   a `dropDatabase`, a drop and re-create, a rename away, a `mongorestore --drop` all change or
 *   remove it). The UUIDs seen are kept in the metadata (`guard`), so a change made while Ferry was
 *   stopped is noticed after a restart.
 *
 * Ferry's own catalog changes (change-event application's DDL: drop, rename, create, a collection
 * read again) run through `changing`, which excludes a check while they run, first forgets the
 * recorded identity of the namespaces they name and lists them as changing (durably: a Ferry killed
 * right after its own change must not take it for someone else's after a restart), and has the
 * next check learn the new one. A name stays listed while the destination and Ferry's records
 * disagree on it (gone from one, recorded in the other), which a restarted Ferry's replay of the
 * change settles.
 *
 * Why not the destination's change stream: a change event does not say who made the change, so
 * telling Ferry's own DDL (applied on behalf of the source) from someone else's would rest on
 * matching events to what Ferry issued, racing it; a destination restarted empty has lost that
 * stream's history anyway; and the recorded identity is what commit must check in any case.
 * Content differences are not checked here: that is verification's job.
 */
import type { Binary } from 'bson';
import { listCollectionEntries } from '../cluster/commands.js';
import type { Cluster } from '../cluster/connect.js';
import { nameCluster } from '../domain/clusters.js';
import { DestinationChanged } from '../errors/errors.js';
import type { Lease } from '../meta/lease.js';
import { NamespaceRecords } from '../meta/namespaces.js';
import { ResumeStore } from '../meta/resume.js';
import type { MetadataStore } from '../meta/store.js';
import { KnownCatalog, type ChangedName } from './known-catalog.js';

export interface GuardOptions {
  destination: Cluster;
  store: MetadataStore;
  lease: Lease;
  /** When the sync's resume document was created: the one this sync made. */
  createdAt: Date;
}

/** Most problems named in one DestinationChanged. */
const NAMED = 5;

function uuidText(uuid: Binary | undefined): string | undefined {
  return uuid === undefined ? undefined : Buffer.from(uuid.buffer).toString('hex');
}

export class DestinationGuard {
  readonly #options: GuardOptions;
  readonly #records: NamespaceRecords;
  readonly #resume: ResumeStore;
  readonly #known: KnownCatalog;
  /** Checks and Ferry's own changes, one at a time. */
  #turn: Promise<unknown> = Promise.resolve();
  /** Names Ferry changed since the last check: their identity is learned again. */
  readonly #changed: ChangedName[] = [];

  constructor(options: GuardOptions) {
    this.#options = options;
    this.#records = new NamespaceRecords(options.store);
    this.#resume = new ResumeStore(options.store);
    this.#known = new KnownCatalog(options.store);
  }

  #exclusive<T>(task: () => Promise<T>): Promise<T> {
    const result = this.#turn.then(task);
    this.#turn = result.catch(() => undefined);
    return result;
  }

  /** Runs one of Ferry's own catalog changes (see the module comment). */
  changing<T>(names: readonly ChangedName[], change: () => Promise<T>): Promise<T> {
    return this.#exclusive(async () => {
      await this.#known.forget(names);
      try {
        return await change();
      } finally {
        this.#changed.push(...names);
      }
    });
  }

  /** Checks everything (see the module comment); DestinationChanged (or LeaseLost) when something else changed it. */
  check(): Promise<void> {
    return this.#exclusive(() => this.#check());
  }

  async #check(): Promise<void> {
    const { lease, destination, createdAt } = this.#options;
    const where = nameCluster(destination.endpoint);
    await lease.renew();
    const resume = await this.#resume.read();
    if (resume === null || resume.createdAt.getTime() !== createdAt.getTime()) {
      throw new DestinationChanged(
        `the record of this sync (resume document "${lease.instance}") on ${where} ` +
          `${resume === null ? "is gone: Ferry's metadata database was dropped or emptied" : 'was replaced by another'}`,
      );
    }
    const changed = this.#changed.splice(0);
    const known = await this.#known.read(changed);
    const names = await this.#records.created();
    const byDatabase = new Map<string, typeof names>();
    for (const name of names) {
      const inDatabase = byDatabase.get(name.db);
      if (inDatabase === undefined) byDatabase.set(name.db, [name]);
      else inDatabase.push(name);
    }
    const problems: string[] = [];
    const seen = new Map<string, string>();
    // Names of Ferry's own changes that the destination and the records do not agree on yet (a
    // Ferry killed between its drop or rename and recording it): pending until they agree.
    const unsettled: ChangedName[] = [];
    for (const [db, recorded] of byDatabase) {
      const entries = new Map((await listCollectionEntries(destination.client.db(db))).map((entry) => [entry.name, entry]));
      for (const { coll, type } of recorded) {
        const ns = `${db}.${coll}`;
        const entry = entries.get(coll);
        const isView = entry?.type === 'view';
        if (entry === undefined || isView !== (type === 'view')) {
          if (this.#known.pending(ns)) unsettled.push({ db, coll });
          else if (entry === undefined) problems.push(`${ns} (a ${type} Ferry created) is gone`);
          else problems.push(`${ns} is now a ${entry.type}, where Ferry created a ${type}`);
          continue;
        }
        const uuid = uuidText(entry.uuid);
        if (uuid === undefined) continue;
        const before = known.get(ns);
        if (before !== undefined && before !== uuid)
          problems.push(`${ns} was dropped and created again (collection UUID ${before}, now ${uuid})`);
        seen.set(ns, before ?? uuid);
      }
    }
    if (problems.length > 0) {
      const more = problems.length > NAMED ? `, and ${problems.length - NAMED} more` : '';
      throw new DestinationChanged(`something other than Ferry changed ${where}: ${problems.slice(0, NAMED).join('; ')}${more}`);
    }
    await this.#known.write(seen, unsettled);
  }
}
