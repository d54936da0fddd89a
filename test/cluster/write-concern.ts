/**
 * Which commands take a write concern, and which write concerns ask for the journal: what the
 * data directory waits for before acknowledging, and what fail points' `writeConcernError` needs.
 */

/** Commands that take a write concern (mongod's `supportsWriteConcern`), by name. */
const WRITE_CONCERN_COMMANDS = new Set([
  'insert',
  'update',
  'delete',
  'findAndModify',
  'findandmodify',
  'create',
  'drop',
  'dropDatabase',
  'createIndexes',
  'dropIndexes',
  'deleteIndexes',
  'collMod',
  'renameCollection',
  'commitTransaction',
  'abortTransaction',
  'createUser',
  'updateUser',
  'dropUser',
  'dropAllUsersFromDatabase',
  'applyOps',
  'appendOplogNote',
  'setUserWriteBlockMode',
  'setFeatureCompatibilityVersion',
  'convertToCapped',
  'cloneCollectionAsCapped',
  '_mergeAuthzCollections',
]);

/** Whether the command takes a write concern (an aggregate only when it writes: `$out`, `$merge`). */
export function supportsWriteConcern(name: string, body: Record<string, unknown>): boolean {
  if (name === 'aggregate') {
    const pipeline = Array.isArray(body.pipeline) ? (body.pipeline as unknown[]) : [];
    return pipeline.some((stage) => typeof stage === 'object' && stage !== null && ('$out' in stage || '$merge' in stage));
  }
  return WRITE_CONCERN_COMMANDS.has(name);
}

/**
 * Whether the command's write concern is acknowledged only once the write is journaled: `j: true`,
 * `w: 'majority'` (writeConcernMajorityJournalDefault is true), or none given, which is mongod's
 * implicit default `{w: 'majority'}` since 5.0. `w: 0` and `w: 1` without `j` are not.
 */
export function asksForJournal(body: Record<string, unknown>): boolean {
  const concern = body.writeConcern as { w?: unknown; j?: unknown } | undefined;
  if (concern === undefined || concern === null) return true;
  if (concern.j === true || concern.w === 'majority') return true;
  return concern.w === undefined && concern.j === undefined;
}
