/**
 * The `$changeStream` stage: its options, read with mongod's checks and errors, and the scope
 * the stream watches (one collection, one database, or the whole cluster).
 */
import type { Timestamp } from 'bson';
import { ServerError } from '../errors.js';
import { bsonTypeName } from '../commands/args.js';
import { decodeToken, type ResumeTokenData } from './token.js';

/** What a stream watches. */
export type StreamScope = { kind: 'collection'; db: string; coll: string } | { kind: 'database'; db: string } | { kind: 'cluster' };

export type FullDocumentMode = 'default' | 'updateLookup' | 'whenAvailable' | 'required';
export type FullDocumentBeforeChangeMode = 'off' | 'whenAvailable' | 'required';

export interface ChangeStreamSpec {
  scope: StreamScope;
  /** Where to start: after a token (resumeAfter/startAfter) or at a time (startAtOperationTime). */
  resumeAfter?: ResumeTokenData;
  startAfter?: ResumeTokenData;
  startAtOperationTime?: Timestamp;
  fullDocument: FullDocumentMode;
  fullDocumentBeforeChange: FullDocumentBeforeChangeMode;
  showExpandedEvents: boolean;
  /** Report writes made by chunk migrations (`fromMigrate`), which streams otherwise leave out. */
  showMigrationEvents?: boolean;
  /**
   * The stream is one shard's part of a stream a router merges (`needsMerge`): a resume token
   * need not be found here (another shard may hold its event; the router checks), and events
   * are passed from just after it in the total order across shards.
   */
  merged?: boolean;
}

/** Databases a stream never reports (and a database stream may not watch). */
export const INTERNAL_DATABASES = new Set(['admin', 'config', 'local']);

const KNOWN_OPTIONS = new Set([
  'resumeAfter',
  'startAfter',
  'startAtOperationTime',
  'fullDocument',
  'fullDocumentBeforeChange',
  'allChangesForCluster',
  'showExpandedEvents',
  'showSystemEvents',
  'showMigrationEvents',
  'showRawUpdateDescription',
  'allowToRunOnConfigDB',
  'allowToRunOnSystemNS',
  'matchCollectionUUIDForUpdateLookup',
]);

function enumValue<T extends string>(field: string, value: unknown, allowed: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if (typeof value !== 'string') {
    throw new ServerError(
      'TypeMismatch',
      `BSON field '$changeStream.${field}' is the wrong type '${bsonTypeName(value)}', expected type 'string'`,
    );
  }
  if (!allowed.includes(value as T)) {
    throw new ServerError('BadValue', `Enumeration value '${value}' for field '$changeStream.${field}' is not a valid value.`);
  }
  return value as T;
}

function bool(field: string, value: unknown): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') {
    throw new ServerError(
      'TypeMismatch',
      `BSON field '$changeStream.${field}' is the wrong type '${bsonTypeName(value)}', expected type 'bool'`,
    );
  }
  return value;
}

/**
 * Reads the `$changeStream` stage of an `aggregate` on `db` (`collection` undefined for
 * `aggregate: 1`), checking it as mongod's `assertIsLegalSpecification` does.
 */
export function parseChangeStreamSpec(stage: unknown, db: string, collection: string | undefined): ChangeStreamSpec {
  if (typeof stage !== 'object' || stage === null || Array.isArray(stage)) {
    throw new ServerError(50808, '$changeStream stage expects a document as argument');
  }
  const options = stage as Record<string, unknown>;
  for (const key of Object.keys(options)) {
    if (!KNOWN_OPTIONS.has(key)) throw new ServerError('IDLUnknownField', `BSON field '$changeStream.${key}' is an unknown field.`);
  }
  const allChangesForCluster = bool('allChangesForCluster', options.allChangesForCluster);
  const showExpandedEvents = bool('showExpandedEvents', options.showExpandedEvents);
  const fullDocument = enumValue(
    'fullDocument',
    options.fullDocument,
    ['default', 'updateLookup', 'whenAvailable', 'required'] as const,
    'default',
  );
  const fullDocumentBeforeChange = enumValue(
    'fullDocumentBeforeChange',
    options.fullDocumentBeforeChange,
    ['off', 'whenAvailable', 'required'] as const,
    'off',
  );

  const shownNs = collection === undefined ? db : `${db}.${collection}`;
  if (allChangesForCluster && (db !== 'admin' || collection !== undefined)) {
    throw new ServerError(
      'InvalidOptions',
      `A $changeStream with 'allChangesForCluster:true' may only be opened on the 'admin' database, and with no collection name; found ${shownNs}`,
    );
  }
  if (db === 'admin' ? !allChangesForCluster : INTERNAL_DATABASES.has(db)) {
    throw new ServerError('InvalidNamespace', `$changeStream may not be opened on the internal ${db} database`);
  }
  if (collection?.startsWith('system.')) {
    throw new ServerError('InvalidNamespace', `$changeStream may not be opened on the internal ${shownNs} collection`);
  }
  if (options.resumeAfter !== undefined && options.startAfter !== undefined) {
    throw new ServerError(50865, "Do not specify both 'resumeAfter' and 'startAfter' in a $changeStream stage");
  }
  const resumeAfter = options.resumeAfter === undefined ? undefined : decodeToken(options.resumeAfter);
  const startAfter = options.startAfter === undefined ? undefined : decodeToken(options.startAfter);
  const token = resumeAfter ?? startAfter;
  let startAtOperationTime: Timestamp | undefined;
  if (options.startAtOperationTime !== undefined) {
    const ts = options.startAtOperationTime as { _bsontype?: string };
    if (ts?._bsontype !== 'Timestamp') {
      throw new ServerError(
        'TypeMismatch',
        `BSON field '$changeStream.startAtOperationTime' is the wrong type '${bsonTypeName(ts)}', expected type 'timestamp'`,
      );
    }
    startAtOperationTime = ts as Timestamp;
  }
  if (startAtOperationTime && token) {
    throw new ServerError(40674, 'Only one type of resume option is allowed, but multiple were found');
  }
  if (resumeAfter?.fromInvalidate) {
    throw new ServerError(
      'InvalidResumeToken',
      "Attempting to resume a change stream using 'resumeAfter' is not allowed from an invalidate notification",
    );
  }
  const scope: StreamScope = allChangesForCluster
    ? { kind: 'cluster' }
    : collection === undefined
      ? { kind: 'database', db }
      : { kind: 'collection', db, coll: collection };
  if (token && token.event && !token.uuid && scope.kind === 'collection') {
    throw new ServerError(
      'InvalidResumeToken',
      'Attempted to resume a single-collection stream, but the resume token does not include a UUID',
    );
  }
  const showMigrationEvents = bool('showMigrationEvents', options.showMigrationEvents);
  return {
    scope,
    resumeAfter,
    startAfter,
    startAtOperationTime,
    fullDocument,
    fullDocumentBeforeChange,
    showExpandedEvents,
    showMigrationEvents,
  };
}

/** Whether the stream reports changes to `db.coll` (system collections never, as mongod). */
export function watchesCollection(scope: StreamScope, db: string, coll: string): boolean {
  switch (scope.kind) {
    case 'collection':
      return scope.db === db && scope.coll === coll;
    case 'database':
      return scope.db === db && !coll.startsWith('system.');
    case 'cluster':
      return !INTERNAL_DATABASES.has(db) && !coll.startsWith('system.');
  }
}

/** Whether the stream reports database-level events (dropDatabase) of `db`. */
export function watchesDatabase(scope: StreamScope, db: string): boolean {
  switch (scope.kind) {
    case 'collection':
      return false;
    case 'database':
      return scope.db === db;
    case 'cluster':
      return !INTERNAL_DATABASES.has(db);
  }
}
