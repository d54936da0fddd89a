/**
 * Reading command arguments with mongod's errors for wrong types, so that every command
 * validates its fields the same way (`BSON field 'find.limit' is the wrong type ...`).
 */
import { ServerError } from '../errors.js';

/** The BSON type name mongod prints for a decoded value. */
export function bsonTypeName(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'number') return Number.isInteger(v) ? 'int' : 'double';
  if (typeof v === 'string') return 'string';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'bigint') return 'long';
  if (Array.isArray(v)) return 'array';
  if (v instanceof Date) return 'date';
  if (v instanceof RegExp) return 'regex';
  const t = (v as { _bsontype?: string })._bsontype;
  switch (t) {
    case 'Long':
      return 'long';
    case 'Int32':
      return 'int';
    case 'Double':
      return 'double';
    case 'Decimal128':
      return 'decimal';
    case 'ObjectId':
      return 'objectId';
    case 'Binary':
      return 'binData';
    case 'Timestamp':
      return 'timestamp';
    case 'BSONRegExp':
      return 'regex';
    case 'MinKey':
      return 'minKey';
    case 'MaxKey':
      return 'maxKey';
    case undefined:
      return 'object';
    default:
      return t.toLowerCase();
  }
}

function typeError(command: string, field: string, v: unknown, expected: string): ServerError {
  return new ServerError(
    'TypeMismatch',
    `BSON field '${command}.${field}' is the wrong type '${bsonTypeName(v)}', expected type${expected.startsWith('[') ? 's' : ''} '${expected}'`,
  );
}

/** Accessors for one command's body, naming the command in errors. */
export class Args {
  constructor(
    readonly command: string,
    readonly body: Record<string, unknown>,
  ) {}

  has(field: string): boolean {
    return this.body[field] !== undefined;
  }

  string(field: string): string | undefined {
    const v = this.body[field];
    if (v === undefined) return undefined;
    if (typeof v !== 'string') throw typeError(this.command, field, v, 'string');
    return v;
  }

  requiredString(field: string): string {
    const v = this.string(field);
    if (v === undefined) throw new ServerError('IDLFailedToParse', `BSON field '${this.command}.${field}' is missing but a required field`);
    return v;
  }

  /** A number of any numeric BSON type. */
  number(field: string): number | undefined {
    const v = this.body[field];
    if (v === undefined || v === null) return undefined;
    if (typeof v === 'number') return v;
    const t = (v as { _bsontype?: string })._bsontype;
    if (t === 'Long' || t === 'Decimal128' || t === 'Int32' || t === 'Double') return Number(String(v));
    throw typeError(this.command, field, v, '[long, int, decimal, double]');
  }

  /** A non-negative integer (`limit`, `skip`, `batchSize`). */
  count(field: string): number | undefined {
    const n = this.number(field);
    if (n === undefined) return undefined;
    if (n < 0) {
      throw new ServerError('BadValue', `BSON field '${field}' value must be >= 0, actual value '${n}'`);
    }
    return Math.trunc(n);
  }

  boolean(field: string): boolean | undefined {
    const v = this.body[field];
    if (v === undefined || v === null) return undefined;
    if (typeof v === 'boolean') return v;
    if (typeof v === 'number') return v !== 0;
    throw typeError(this.command, field, v, 'bool');
  }

  object(field: string): Record<string, unknown> | undefined {
    const v = this.body[field];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'object' || Array.isArray(v) || (v as { _bsontype?: string })._bsontype) {
      throw typeError(this.command, field, v, 'object');
    }
    return v as Record<string, unknown>;
  }

  array(field: string): unknown[] | undefined {
    const v = this.body[field];
    if (v === undefined || v === null) return undefined;
    if (!Array.isArray(v)) throw typeError(this.command, field, v, 'array');
    return v;
  }
}
