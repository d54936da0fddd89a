/**
 * What `start` does before any phase runs. Nothing is written until
 * everything that can be checked is: this instance has no sync recorded on the destination, and
 * Ferry's user holds the write-blocking privileges the request needs. Then, in order: the sync's
 * lease is taken (src/meta/lease.ts: a second Ferry with this id is refused from here on), and
 * looked for on the source: found there, source and destination are one cluster, whatever their
 * connection strings say (preflight's `hello` check cannot tell two routers of one sharded
 * cluster apart; this can), and the start is refused with the lease removed again; the metadata
 * an earlier sync with this id left is cleared; one of several instances claims the migration's
 * start with its request, or is refused if another instance's differs (src/coordination/); T0 is
 * taken on the source (an `appendOplogNote`: every write the copy could miss is at or after it);
 * the destination is write-blocked (unless `enableUserWriteBlocking: "none"`); and the resume
 * document (state RUNNING, phase `planning`, the request, T0) is written. A failure on the way
 * leaves the destination unblocked again.
 */
import { appendOplogNote, missingWriteBlockingPrivileges, setUserWriteBlocking } from '../cluster/commands.js';
import type { Cluster } from '../cluster/connect.js';
import { asClusterError, onCluster } from '../cluster/errors.js';
import { nameCluster } from '../domain/clusters.js';
import { blocksDestination, blocksSource, type StartRequest } from '../domain/start-request.js';
import { InsufficientPrivileges, InvalidStateTransition, SameCluster } from '../errors/errors.js';
import { readLease, type Lease } from '../meta/lease.js';
import type { ResumeDocument, ResumeStore } from '../meta/resume.js';
import type { MetadataStore } from '../meta/store.js';

/** The sync a start request describes: its clusters in its direction, and its metadata. */
export interface SyncTarget {
  request: StartRequest;
  source: Cluster;
  destination: Cluster;
  store: MetadataStore;
  resume: ResumeStore;
  /** The lease of this sync on the destination; every metadata write is fenced by it. */
  lease: Lease;
  /** One of several instances (src/coordination/): its start is claimed once its lease is taken. */
  coordination?: { claimStart(): Promise<void>; releaseStart(): Promise<void> };
}

/** Runs `operation` on `cluster`, its failure reported as the API reports a cluster's. */
function on<T>(cluster: Cluster, what: string, operation: Promise<T>): Promise<T> {
  return onCluster(cluster.endpoint, what, operation);
}

/**
 * Write blocking needs Ferry's user to bypass it and to set it on each cluster the mode blocks
 * (clusters without access control need nothing).
 */
export async function checkWriteBlockingPrivileges(target: Pick<SyncTarget, 'request' | 'source' | 'destination'>): Promise<void> {
  const mode = target.request.enableUserWriteBlocking;
  const blocked = [...(blocksDestination(mode) ? [target.destination] : []), ...(blocksSource(mode) ? [target.source] : [])];
  for (const cluster of blocked) {
    const missing = await on(cluster, 'connectionStatus (checking privileges)', missingWriteBlockingPrivileges(cluster.client));
    if (missing.length > 0) {
      throw new InsufficientPrivileges(
        `enableUserWriteBlocking "${mode}" needs Ferry's user on ${nameCluster(cluster.endpoint)} to hold ${missing.join(' and ')} ` +
          'on the cluster (the built-in restore or root role has both); grant it, or start with enableUserWriteBlocking "none"',
      );
    }
  }
}

/** Begins the sync (see the module comment); returns its new resume document. */
export async function beginSync(target: SyncTarget, id: string, ferryVersion: string): Promise<ResumeDocument> {
  const { destination, resume } = target;
  const existing = await on(destination, 'reading the metadata', resume.read());
  if (existing !== null) {
    throw new InvalidStateTransition(
      `${nameCluster(destination.endpoint)} already holds the metadata of a sync with id "${id}" (state ${existing.state}); ` +
        "start Ferry with another --id, or drop that sync's metadata",
    );
  }
  await checkWriteBlockingPrivileges(target);
  const { lease } = target;
  const leaseExisted = (await on(destination, 'reading the lease of the sync', lease.read())) !== null;
  await on(destination, 'taking the lease of the sync', lease.acquire());
  try {
    return await begin(target, id, ferryVersion);
  } catch (error) {
    // Not started: its claim of the migration's start goes while its lease is held, then the lease
    // (removed if this start made it), so nothing stays held.
    await target.coordination?.releaseStart().catch(() => undefined);
    await (leaseExisted ? lease.release() : lease.discard()).catch(() => undefined);
    throw error;
  }
}

/** The destination's lease, just taken, read on the source: there too means they are one cluster. */
async function refuseSameCluster(target: SyncTarget): Promise<void> {
  const { source, destination, lease } = target;
  const seen = await on(source, "looking for the destination's lease on the source", readLease(source.client, lease.instance));
  if (seen !== null && seen.holder.token === lease.holder.token && seen.epoch === lease.epoch) {
    throw new SameCluster(
      `source ${nameCluster(source.endpoint)} and destination ${nameCluster(destination.endpoint)} are the same cluster ` +
        '(what Ferry just wrote on the destination reads back from the source); a sync needs two different clusters',
    );
  }
}

async function begin(target: SyncTarget, id: string, ferryVersion: string): Promise<ResumeDocument> {
  const { request, source, destination, store, resume } = target;
  await refuseSameCluster(target);
  await on(destination, 'clearing metadata an earlier sync with this id left', store.forgetInstance());
  await on(destination, 'indexing the metadata', store.ensureIndexes());
  // One of several instances: the same start request as the migration's, or refused here, before anything else is written.
  await target.coordination?.claimStart();
  const startAtOperationTime = await on(source, 'appendOplogNote (taking the start time)', appendOplogNote(source, 'sync start', id));
  const blockDestination = blocksDestination(request.enableUserWriteBlocking);
  if (blockDestination) {
    await on(destination, 'setUserWriteBlockMode (blocking user writes during the sync)', setUserWriteBlocking(destination.client, true));
  }
  try {
    return await resume.create({ request, startAtOperationTime, ferryVersion });
  } catch (error) {
    // Not started: leave the destination as it was.
    if (blockDestination) await setUserWriteBlocking(destination.client, false).catch(() => undefined);
    throw asClusterError(destination.endpoint, 'writing the metadata', error);
  }
}
