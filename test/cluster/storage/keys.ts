/**
 * Index keys: extracting them from documents (dotted paths, arrays make multikey indexes) and a
 * canonical string form under which values equal in mongod's comparison are equal strings
 * (1, 1.0 and NumberLong(1) share one key), for unique-index maps.
 */
import { typeRank } from '../bson-order.js';

/** Values at a dotted path; arrays along the way fan out (multikey). Missing → [undefined]. */
export function valuesAtPath(doc: unknown, path: string): unknown[] {
  const parts = path.split('.');
  let current: unknown[] = [doc];
  for (const part of parts) {
    const next: unknown[] = [];
    for (const value of current) {
      if (Array.isArray(value)) {
        if (/^\d+$/.test(part) && Number(part) < value.length) next.push(value[Number(part)]);
        else for (const item of value) if (isDocument(item) && part in item) next.push(item[part]);
      } else if (isDocument(value) && part in value) {
        next.push(value[part]);
      }
    }
    current = next;
    if (current.length === 0) return [undefined];
  }
  // A terminal array indexes each element (and an empty array indexes as undefined).
  const out: unknown[] = [];
  for (const v of current) {
    if (Array.isArray(v)) {
      if (v.length === 0) out.push(undefined);
      else out.push(...v);
    } else out.push(v);
  }
  return out;
}

/** A plain (embedded) document: not an array, a date or a BSON value class. */
export function isDocument(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date) && !('_bsontype' in v);
}

function numericForm(v: unknown): string {
  if (typeof v === 'number') {
    if (Number.isNaN(v)) return 'NaN';
    if (Number.isInteger(v)) return BigInt(v).toString();
    return String(v);
  }
  const t = (v as { _bsontype: string })._bsontype;
  if (t === 'Long') return (v as { toString(): string }).toString();
  if (t === 'Decimal128') {
    const n = Number.parseFloat(String(v));
    return numericForm(n);
  }
  return numericForm((v as { value: number }).value);
}

/** A string that is equal for two values exactly when mongod's comparison says they are equal. */
export function canonicalKey(v: unknown): string {
  const rank = typeRank(v);
  switch (rank) {
    case 0: // undefined indexes as null
    case 5:
      return '5:';
    case 10:
      return `10:${numericForm(v)}`;
    case 15:
      return `15:${typeof v === 'string' ? v : (v as { value: string }).value}`;
    case 20: {
      const entries = Object.entries(v as object).map(([k, x]) => `${JSON.stringify(k)}=${canonicalKey(x)}`);
      return `20:{${entries.join(',')}}`;
    }
    case 25:
      return `25:[${(v as unknown[]).map(canonicalKey).join(',')}]`;
    case 30: {
      const b = v as { sub_type: number; buffer: Uint8Array; position: number };
      return `30:${b.sub_type}:${Buffer.from(b.buffer.subarray(0, b.position)).toString('hex')}`;
    }
    case 35:
      return `35:${String(v)}`;
    case 45:
      return `45:${(v as Date).getTime()}`;
    case 47: {
      const t = v as { t: number; i: number };
      return `47:${t.t}:${t.i}`;
    }
    case 50: {
      const r = v as RegExp | { pattern: string; options: string };
      return r instanceof RegExp ? `50:${r.source}/${r.flags}` : `50:${r.pattern}/${r.options}`;
    }
    default:
      return `${rank}:${String(v)}`;
  }
}

/** mongod's rendering of a key value in a duplicate-key message, e.g. `{ email: "a@b" }`. */
export function describeKey(keyValue: Record<string, unknown>): string {
  const parts = Object.entries(keyValue).map(([k, v]) => `${k}: ${describeValue(v)}`);
  return `{ ${parts.join(', ')} }`;
}

/** mongod's rendering of one element (`BSONElement::toString`), e.g. `a: [ 1, 2 ]`, for messages. */
export function describeElement(name: string, value: unknown): string {
  return `${name}: ${describeValue(value)}`;
}

/** mongod's rendering of a value in messages: strings quoted, doubles with a fraction, ObjectId('..'). */
export function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (v === undefined) return 'undefined';
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number') return String(v);
  if (v instanceof Date) return `new Date(${v.getTime()})`;
  const t = (v as { _bsontype?: string })._bsontype;
  switch (t) {
    case 'ObjectId':
      return `ObjectId('${String(v)}')`;
    case 'Double': {
      const n = (v as { value: number }).value;
      return Number.isInteger(n) ? n.toFixed(1) : String(n);
    }
    case 'Int32':
      return String((v as { value: number }).value);
    case 'Long':
    case 'Decimal128':
      return String(v);
    case 'Timestamp': {
      const ts = v as { t: number; i: number };
      return `Timestamp(${ts.t}, ${ts.i})`;
    }
    case 'BSONRegExp': {
      const r = v as { pattern: string; options: string };
      return `/${r.pattern}/${r.options}`;
    }
    case 'MinKey':
      return 'MinKey';
    case 'MaxKey':
      return 'MaxKey';
    case undefined:
      break;
    default:
      return String(v);
  }
  if (Array.isArray(v)) return v.length === 0 ? '[]' : `[ ${v.map(describeValue).join(', ')} ]`;
  if (typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>);
    return entries.length === 0 ? '{}' : describeKey(v as Record<string, unknown>);
  }
  return String(v);
}
