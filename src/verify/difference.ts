/**
 * What differs between a document on the source and on the destination, in words an operator can
 * act on: which top-level field is missing, extra, of another BSON type, holds another value, or
 * whether the same fields come in another order. The documents are compared as bytes elsewhere;
 * this only explains a difference already found.
 */
import { bsonTypeName, elementName, forEachElement } from '../bson/index.js';
import type { MismatchKind } from '../domain/verification.js';

interface Field {
  name: string;
  type: number;
  value: Uint8Array;
}

function fields(doc: Uint8Array): Field[] {
  const found: Field[] = [];
  forEachElement(doc, (element) => {
    found.push({ name: elementName(doc, element), type: element.type, value: doc.subarray(element.valueOffset, element.valueEnd) });
  });
  return found;
}

const list = (names: readonly string[]) => names.map((name) => JSON.stringify(name)).join(', ');

/** The kind and a short description of how `destination` differs from `source` (either may be absent). */
export function describeDocumentDifference(
  source: Uint8Array | undefined,
  destination: Uint8Array | undefined,
): { kind: MismatchKind; detail: string } {
  if (source === undefined) return { kind: 'extra', detail: 'the destination holds a document the source does not' };
  if (destination === undefined) return { kind: 'missing', detail: 'the destination lacks this document' };
  const a = fields(source);
  const b = fields(destination);
  const inB = new Map(b.map((field) => [field.name, field]));
  const inA = new Map(a.map((field) => [field.name, field]));
  const missing = a.filter((field) => !inB.has(field.name)).map((field) => field.name);
  if (missing.length > 0)
    return { kind: 'different', detail: `field${missing.length > 1 ? 's' : ''} ${list(missing)} missing on the destination` };
  const extra = b.filter((field) => !inA.has(field.name)).map((field) => field.name);
  if (extra.length > 0) return { kind: 'different', detail: `field${extra.length > 1 ? 's' : ''} ${list(extra)} only on the destination` };
  for (const field of a) {
    const other = inB.get(field.name)!;
    if (other.type !== field.type) {
      return {
        kind: 'different',
        detail:
          `field ${JSON.stringify(field.name)} is ${bsonTypeName(field.type)} on the source, ` +
          `${bsonTypeName(other.type)} on the destination`,
      };
    }
    if (Buffer.compare(field.value, other.value) !== 0) return { kind: 'different', detail: `field ${JSON.stringify(field.name)} differs` };
  }
  if (a.some((field, i) => field.name !== b[i]!.name)) {
    return {
      kind: 'different',
      detail: `same fields in another order: source ${list(a.map((f) => f.name))}; destination ${list(b.map((f) => f.name))}`,
    };
  }
  return { kind: 'different', detail: 'the BSON differs' };
}
