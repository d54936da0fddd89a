/**
 * mongod's text rendering of BSON values in error messages (BSONObj::toString):
 * `{ a: 1, b: "x", u: UUID("…"), o: ObjectId('…'), d: new Date(1700000000000) }`.
 */

/** Renders one decoded value as mongod prints it. */
export function formatValue(v: unknown): string {
  if (v === null) return 'null';
  if (v === undefined) return 'undefined';
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number') return String(v);
  if (typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  if (v instanceof Date) return `new Date(${v.getTime()})`;
  if (v instanceof RegExp) return `/${v.source}/${v.flags}`;
  if (Array.isArray(v)) return v.length === 0 ? '[]' : `[ ${v.map(formatValue).join(', ')} ]`;
  const t = (v as { _bsontype?: string })._bsontype;
  switch (t) {
    case 'ObjectId':
      return `ObjectId('${(v as { toHexString(): string }).toHexString()}')`;
    case 'Binary': {
      const b = v as { sub_type: number; toUUID?: () => { toHexString(dashes?: boolean): string }; toString(encoding: string): string };
      if (b.sub_type === 4 && b.toUUID) return `UUID("${b.toUUID().toHexString(true)}")`;
      return `BinData(${b.sub_type}, ${b.toString('hex').toUpperCase()})`;
    }
    case 'Timestamp': {
      const ts = v as { t: number; i: number };
      return `Timestamp(${ts.t}, ${ts.i})`;
    }
    case 'Int32':
    case 'Double':
      return String((v as { value: number }).value);
    case 'Long':
    case 'Decimal128':
      return String(v);
    case 'MinKey':
      return 'MinKey';
    case 'MaxKey':
      return 'MaxKey';
    case 'BSONRegExp': {
      const r = v as { pattern: string; options: string };
      return `/${r.pattern}/${r.options}`;
    }
    case undefined:
      return formatDocument(v as Record<string, unknown>);
    default:
      return String(v);
  }
}

/** Renders a document as mongod prints it in messages. */
export function formatDocument(doc: Record<string, unknown>): string {
  const entries = Object.entries(doc).filter(([, v]) => v !== undefined);
  if (entries.length === 0) return '{}';
  return `{ ${entries.map(([k, v]) => `${k}: ${formatValue(v)}`).join(', ')} }`;
}
