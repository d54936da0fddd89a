/**
 * mongod's sharding error codes (src/mongo/base/error_codes.yml) that the shared code table does
 * not list: errors built here carry their proper `codeName`.
 */
import { ServerError } from '../errors.js';

export const SHARDING_CODES = {
  HostUnreachable: 6,
  AlreadyInitialized: 23,
  ShardKeyNotFound: 61,
  ShardNotFound: 70,
  NamespaceNotSharded: 118,
  WouldChangeOwningShard: 283,
  ConflictingOperationInProgress: 117,
} as const;

/** A ServerError whose code is a sharding code, named as mongod names it. */
export function shardingError(
  name: keyof typeof SHARDING_CODES,
  message: string,
  extra: Record<string, unknown> = {},
  labels: string[] = [],
): ServerError {
  const error = new ServerError(SHARDING_CODES[name], message, extra, labels);
  Object.defineProperty(error, 'codeName', { value: name });
  return error;
}
