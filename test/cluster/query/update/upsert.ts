/**
 * The document an upsert starts from: the query's equality conditions (top level and inside
 * `$and`, `{f: v}` or `{f: {$eq: v}}`), set at their paths in path order with `_id` first, as
 * mongod's extractEqualityMatches does. Values keep the bytes the client sent.
 */
import { ServerError } from '../../errors.js';
import { BsonType, DocNode, type Slot, slotType, toLeaf } from './tree.js';
import { idFirst } from './replace.js';

const REGEX = 0x0b;

function equalities(query: DocNode, out: [string, Slot][]): void {
  for (let i = 0; i < query.length; i++) {
    const name = query.names[i];
    const value = query.values[i];
    if (name === '$and' && slotType(value) === BsonType.Array) {
      const clauses = query.childAt(i)!;
      for (let j = 0; j < clauses.length; j++) {
        const clause = clauses.childAt(j);
        if (clause && !clause.isArray) equalities(clause, out);
      }
      continue;
    }
    if (name.startsWith('$')) continue;
    const type = slotType(value);
    if (type === REGEX) continue;
    if (type === BsonType.Object) {
      const spec = query.childAt(i)!;
      if (spec.length > 0 && spec.names[0].startsWith('$')) {
        const eq = spec.indexOf('$eq');
        if (eq >= 0) out.push([name, spec.values[eq]]);
        continue;
      }
    }
    out.push([name, value]);
  }
}

/** The base document for an upsert from its (raw) query; `onlyId` for replacement upserts. */
export function upsertBase(query: Buffer, onlyId: boolean): DocNode {
  const found: [string, Slot][] = [];
  equalities(DocNode.parse(query), found);
  const fields = onlyId ? found.filter(([path]) => path === '_id') : found;
  fields.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (let i = 1; i < fields.length; i++) {
    const [prev] = fields[i - 1];
    const [path] = fields[i];
    if (path === prev) {
      throw new ServerError('NotSingleValueField', `cannot infer query fields to set, path '${path}' is matched twice`);
    }
    if (path.startsWith(`${prev}.`)) {
      throw new ServerError('NotSingleValueField', `cannot infer query fields to set, both paths '${path}' and '${prev}' are matched`);
    }
  }
  const doc = DocNode.empty(false);
  for (const [path, value] of fields) {
    const parts = path.split('.');
    let node = doc;
    for (let i = 0; i < parts.length - 1; i++) {
      let next = node.child(parts[i]);
      if (!next) {
        next = DocNode.empty(false);
        node.set(parts[i], next);
      }
      node = next;
    }
    node.set(parts[parts.length - 1], toLeaf(value));
  }
  idFirst(doc);
  return doc;
}
