/**
 * `count` (`{n}` after `skip` and `limit`) and `distinct` (`{values}`: the distinct values at a
 * path of the matching documents, array elements counted one by one, in BSON order, with their
 * exact types). Both work on views through the view's pipeline.
 */
import { BSON } from 'bson';
import { ServerError } from '../errors.js';
import { typed } from '../raw.js';
import { canonicalKey } from '../storage/keys.js';
import { matchDocuments } from '../query/find.js';
import { Collation, comparatorOf } from '../collation/collation.js';
import { aggregate, resolveNamespace } from '../query/aggregate/source.js';
import { Args } from './args.js';
import { defineCommand } from './registry.js';

defineCommand({
  name: 'count',
  handler: ({ instance, body, db }) => {
    const args = new Args('count', body);
    const name = args.requiredString('count');
    const query = args.object('query') ?? {};
    const skip = args.number('skip') ?? 0;
    if (skip < 0) throw new ServerError(51024, `BSON field 'skip' value must be >= 0, actual value '${skip}'`);
    // A negative limit counts like its absolute value (mongod's legacy rule).
    const limit = Math.abs(args.number('limit') ?? 0);
    const hint = body.hint as string | Record<string, unknown> | undefined;
    const resolved = resolveNamespace(instance, db, name);
    if (resolved.isView) {
      const stages: unknown[] = [{ $match: query }];
      if (skip > 0) stages.push({ $skip: skip });
      if (limit > 0) stages.push({ $limit: limit });
      stages.push({ $count: 'n' });
      const row = aggregate(instance, db, name, stages, { collation: body.collation })();
      return { n: row ? (row.doc.n as number) : 0 };
    }
    const collection = resolved.collection;
    if (!collection) return { n: 0 };
    let n: number;
    if (Object.keys(query).length === 0 && hint === undefined) {
      n = Math.max(0, collection.count - skip);
    } else {
      n = 0;
      const collation = Collation.effective(body.collation, collection.options.collation);
      const pull = matchDocuments(collection, { filter: query, hint, skip, collation });
      while ((limit === 0 || n < limit) && pull()) n++;
    }
    return { n: limit > 0 ? Math.min(n, limit) : n };
  },
});

function isDocument(v: unknown): v is Record<string, unknown> {
  return (
    typeof v === 'object' &&
    v !== null &&
    !Array.isArray(v) &&
    !(v instanceof Date) &&
    (v as { _bsontype?: string })._bsontype === undefined
  );
}

/** Values at a dotted path for `distinct`: arrays along the way fan out, a terminal array gives its elements. */
function distinctValues(value: unknown, parts: string[], at: number, out: unknown[]): void {
  if (at === parts.length) {
    if (Array.isArray(value)) out.push(...value);
    else if (value !== undefined) out.push(value);
    return;
  }
  if (Array.isArray(value)) {
    for (const element of value) if (isDocument(element) || Array.isArray(element)) distinctValues(element, parts, at, out);
    return;
  }
  if (isDocument(value)) distinctValues(value[parts[at]], parts, at + 1, out);
}

defineCommand({
  name: 'distinct',
  handler: ({ instance, body, db }) => {
    const args = new Args('distinct', body);
    const name = args.requiredString('distinct');
    const key = args.requiredString('key');
    if (key.length === 0) throw new ServerError('BadValue', 'FieldPath cannot be constructed with empty string');
    const query = args.object('query') ?? {};
    const parts = key.split('.');
    const resolved = resolveNamespace(instance, db, name);
    const collation = resolved.isView ? undefined : Collation.effective(body.collation, resolved.collection?.options.collation);
    const compare = comparatorOf(collation);
    // Values equal under the collation are one value (the first met), as in mongod's distinct.
    const found = new Map<string, unknown>();
    const collated: unknown[] = [];
    const collect = (raw: Buffer) => {
      const values: unknown[] = [];
      distinctValues(BSON.deserialize(raw, typed), parts, 0, values);
      for (const v of values) {
        if (collation) {
          if (!collated.some((seen) => compare(seen, v) === 0)) collated.push(v);
          continue;
        }
        const k = canonicalKey(v);
        if (!found.has(k)) found.set(k, v);
      }
    };
    if (resolved.isView) {
      const pull = aggregate(instance, db, name, [{ $match: query }], { collation: body.collation });
      for (let row = pull(); row; row = pull()) collect(row.raw);
    } else {
      const pull = matchDocuments(resolved.collection, {
        filter: query,
        hint: body.hint as string | Record<string, unknown> | undefined,
        collation,
      });
      for (let m = pull(); m; m = pull()) collect(m.entry.raw);
    }
    return { values: (collation ? collated : [...found.values()]).sort(compare) };
  },
});
