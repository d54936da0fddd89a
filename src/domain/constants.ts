/**
 * Fixed figures Ferry works with: mongod's limits, mongosync's rules, the forms temporary
 * characteristics take on the destination. (Figures an operator can set are options:
 * src/config/options.ts.)
 */

/** mongod's largest BSON document (`maxBsonObjectSize`). */
export const MAX_BSON_OBJECT_BYTES = 16 * 1024 * 1024;

/** mongod's largest message (`maxMessageSizeBytes`): no single write can be larger. */
export const MAX_MESSAGE_BYTES = 48_000_000;

/** mongod's most statements in one write command (`maxWriteBatchSize`). */
export const MAX_WRITE_BATCH_SIZE = 100_000;

/** mongosync's limit: `canCommit` is false while lag exceeds it. */
export const COMMIT_LAG_LIMIT_SECONDS = 30;

/** `expireAfterSeconds` of TTL indexes during sync: the largest 32-bit integer (nothing expires). */
export const TEMPORARY_TTL_SECONDS = 2147483647;

/** The name mongod gives every collection's `_id` index. */
export const ID_INDEX_NAME = '_id_';

/** mongod's largest capped collection size: 1 PB ("size cannot exceed 1 PB"). */
export const MAX_CAPPED_SIZE_BYTES = 1024 ** 5;

/** Log levels, least to most severe, as mongosync names them. */
export const VERBOSITY_LEVELS = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL', 'PANIC'] as const;
export type Verbosity = (typeof VERBOSITY_LEVELS)[number];

/** Interfaces on which the unauthenticated API is reachable only from this machine. */
export const LOOPBACK_ADDRESSES: readonly string[] = ['127.0.0.1', '::1', 'localhost'];
