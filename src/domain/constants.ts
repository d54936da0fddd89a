/**
 * Fixed figures Ferry works with: mongod's limits, mongosync's rules, the forms temporary
 * characteristics take on the destination. (Figures an operator can set are options:
 * src/config/options.ts.)
 */
import { BlockList, isIPv4, isIPv6 } from 'node:net';

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

/**
 * Whether an interface address is reachable only from this machine: `localhost`, any IPv4
 * loopback address (all of 127.0.0.0/8, not only 127.0.0.1), `::1`, and IPv4 loopback addresses
 * written as IPv6 (`::ffff:127.0.0.2`).
 */
export function isLoopbackAddress(address: string): boolean {
  if (address === 'localhost') return true;
  const type = isIPv4(address) ? 'ipv4' : isIPv6(address) ? 'ipv6' : undefined;
  return type !== undefined && LOOPBACK.check(address, type);
}

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');
