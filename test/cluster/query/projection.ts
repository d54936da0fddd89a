/**
 * `find` projections as mongod ≥ 4.4 applies them, on raw documents: inclusion or exclusion of
 * (dotted) paths in document order with `_id` kept unless excluded, `$slice`, `$elemMatch` and
 * the positional `path.$`. Included values keep their exact bytes. Projections with aggregation
 * expressions are evaluated by mingo and re-encoded against the original document.
 */
import { Query } from '../mingo.js';
import { BSON } from 'bson';
import { ServerError } from '../errors.js';
import { promoted } from '../raw.js';
import { matchedArrayIndex } from './positional.js';
import { reencodeDocument } from './reencode.js';
import { BsonType, DocNode, type Slot, promotedOf, slotType } from './update/tree.js';

type Leaf =
  | { kind: 'include' }
  | { kind: 'exclude' }
  | { kind: 'slice'; skip: number | undefined; limit: number }
  | { kind: 'elemMatch'; query: Query }
  | { kind: 'positional' };

type PathTree = Map<string, PathTree | Leaf>;

function isTree(v: PathTree | Leaf): v is PathTree {
  return v instanceof Map;
}

function isOperatorObject(v: unknown): v is Record<string, unknown> {
  return (
    typeof v === 'object' &&
    v !== null &&
    !Array.isArray(v) &&
    !(v instanceof Date) &&
    (v as { _bsontype?: string })._bsontype === undefined
  );
}

function sliceLeaf(arg: unknown): Leaf {
  if (typeof arg === 'number') return { kind: 'slice', skip: undefined, limit: Math.trunc(arg) };
  if (Array.isArray(arg) && arg.length === 2 && arg.every((x) => typeof x === 'number')) {
    const [skip, limit] = arg as number[];
    if (limit <= 0) throw new ServerError(28724, 'Second argument to $slice must be positive');
    return { kind: 'slice', skip: Math.trunc(skip), limit: Math.trunc(limit) };
  }
  throw new ServerError(28667, 'First argument to $slice must be an array');
}

export class Projection {
  private readonly tree: PathTree = new Map();
  private inclusion = false;
  private idExcluded = false;
  private positionalPath: string | undefined;
  private expressions = false;

  constructor(
    private readonly spec: Record<string, unknown>,
    /** The query (promoted), for the positional projection. */
    private readonly filter: Record<string, unknown> | undefined,
  ) {
    let includes = 0;
    let excludes = 0;
    let idIncluded = false;
    for (const [rawPath, value] of Object.entries(spec)) {
      let path = rawPath;
      let leaf: Leaf;
      if (path.endsWith('.$')) {
        if (this.positionalPath !== undefined) {
          throw new ServerError(31276, 'Cannot specify more than one positional projection per query.');
        }
        path = path.slice(0, -2);
        this.positionalPath = path;
        leaf = { kind: 'positional' };
        includes++;
      } else if (typeof value === 'number' || typeof value === 'boolean') {
        const on = typeof value === 'number' ? value !== 0 : value;
        leaf = on ? { kind: 'include' } : { kind: 'exclude' };
        if (path !== '_id') {
          if (on) includes++;
          else excludes++;
        }
        if (path === '_id') {
          this.idExcluded = !on;
          if (on) {
            idIncluded = true;
            continue;
          }
        }
      } else if (isOperatorObject(value) && Object.keys(value).length === 1 && '$slice' in value) {
        leaf = sliceLeaf(value.$slice);
      } else if (isOperatorObject(value) && Object.keys(value).length === 1 && '$elemMatch' in value) {
        const condition = value.$elemMatch;
        if (!isOperatorObject(condition)) throw new ServerError('BadValue', '$elemMatch needs an Object');
        leaf = { kind: 'elemMatch', query: new Query({ v: { $elemMatch: condition } }) };
        includes++;
      } else {
        this.expressions = true;
        includes++;
        continue;
      }
      if (includes > 0 && excludes > 0) {
        throw new ServerError(
          leaf.kind === 'exclude' ? 31254 : 31253,
          leaf.kind === 'exclude'
            ? `Cannot do exclusion on field ${rawPath} in inclusion projection`
            : `Cannot do inclusion on field ${rawPath} in exclusion projection`,
        );
      }
      this.insert(path, leaf, rawPath);
    }
    // `{_id: 1}` alone is an inclusion projection; with exclusions it only keeps `_id`.
    this.inclusion = includes > 0 || (idIncluded && excludes === 0);
  }

  private insert(path: string, leaf: Leaf, rawPath: string): void {
    const parts = path.split('.');
    let node = this.tree;
    for (let i = 0; i < parts.length; i++) {
      const existing = node.get(parts[i]);
      if (i === parts.length - 1) {
        if (existing) throw new ServerError(31250, `Path collision at ${rawPath}`);
        node.set(parts[i], leaf);
        return;
      }
      if (existing && !isTree(existing)) {
        throw new ServerError(31250, `Path collision at ${rawPath} remaining portion ${parts.slice(i + 1).join('.')}`);
      }
      const next: PathTree = existing ?? new Map();
      node.set(parts[i], next);
      node = next;
    }
  }

  /** Projects one stored document; `doc` is its promoted form when the caller already has it. */
  apply(raw: Buffer, doc?: Record<string, unknown>): Buffer {
    if (this.expressions) {
      const input = doc ?? BSON.deserialize(raw, promoted);
      const [out] = new Query({}).find([input], this.spec).all();
      return reencodeDocument(out as Record<string, unknown>, DocNode.parse(raw)).toBuffer();
    }
    const root = DocNode.parse(raw);
    let matched: number | undefined;
    if (this.positionalPath !== undefined) {
      matched = matchedArrayIndex(this.filter, doc ?? BSON.deserialize(raw, promoted), this.positionalPath);
      if (matched === undefined) {
        throw new ServerError(
          51246,
          "Executor error during find command :: caused by :: positional operator '.$' couldn't find a matching element in the array",
        );
      }
    }
    const out = this.project(root, this.tree, true, matched);
    return out.toBuffer();
  }

  private project(node: DocNode, tree: PathTree, top: boolean, matched: number | undefined): DocNode {
    const out = DocNode.empty(node.isArray);
    for (let i = 0; i < node.length; i++) {
      const name = node.nameAt(i);
      const rule = tree.get(name);
      const slot = node.values[i];
      if (top && name === '_id' && !rule) {
        if (!this.idExcluded) push(out, name, slot);
        continue;
      }
      if (!rule) {
        if (!this.inclusion) push(out, name, slot);
        continue;
      }
      if (isTree(rule)) {
        const projected = this.projectInto(node, i, rule, matched);
        if (projected) push(out, name, projected);
        continue;
      }
      const value = this.leaf(slot, rule, matched);
      if (value) push(out, name, value);
    }
    return out;
  }

  /** A sub-tree rule applied to the value at `node.values[i]`: into objects, into each object of an array. */
  private projectInto(node: DocNode, i: number, rule: PathTree, matched: number | undefined): Slot | undefined {
    const type = slotType(node.values[i]);
    if (type === BsonType.Object) return this.project(node.childAt(i)!, rule, false, matched);
    if (type === BsonType.Array) {
      const array = node.childAt(i)!;
      const out = DocNode.empty(true);
      for (let k = 0; k < array.length; k++) {
        const t = slotType(array.values[k]);
        if (t === BsonType.Object) out.values.push(this.project(array.childAt(k)!, rule, false, matched));
        else if (t === BsonType.Array) {
          const nested = this.projectInto(array, k, rule, matched);
          if (nested) out.values.push(nested);
        } else if (!this.inclusion) out.values.push(array.values[k]);
      }
      return out;
    }
    return this.inclusion ? undefined : node.values[i];
  }

  private leaf(slot: Slot, rule: Leaf, matched: number | undefined): Slot | undefined {
    switch (rule.kind) {
      case 'include':
        return slot;
      case 'exclude':
        return undefined;
      case 'slice':
        return slotType(slot) === BsonType.Array ? slice(asArray(slot), rule) : slot;
      case 'elemMatch': {
        if (slotType(slot) !== BsonType.Array) return undefined;
        const array = asArray(slot);
        const hit = array.values.find((v) => rule.query.test({ v: [promotedOf(v)] }));
        return hit === undefined ? undefined : new DocNode(true, [], [hit]);
      }
      case 'positional': {
        if (slotType(slot) !== BsonType.Array) return slot;
        const array = asArray(slot);
        if (matched === undefined || matched >= array.length) {
          throw new ServerError(
            51246,
            "Executor error during find command :: caused by :: positional operator '.$' couldn't find a matching element in the array",
          );
        }
        return new DocNode(true, [], [array.values[matched]]);
      }
    }
  }
}

function push(out: DocNode, name: string, slot: Slot): void {
  if (!out.isArray) out.names.push(name);
  out.values.push(slot);
}

function asArray(slot: Slot): DocNode {
  return slot instanceof DocNode ? slot : DocNode.parse(slot.bytes, true);
}

function slice(array: DocNode, rule: { skip: number | undefined; limit: number }): DocNode {
  const values = array.values;
  if (rule.skip === undefined) {
    const n = rule.limit;
    return new DocNode(true, [], n >= 0 ? values.slice(0, n) : values.slice(Math.max(0, values.length + n)));
  }
  const start = rule.skip >= 0 ? Math.min(rule.skip, values.length) : Math.max(0, values.length + rule.skip);
  return new DocNode(true, [], values.slice(start, start + rule.limit));
}

/** Parses a `find` projection (promoted); undefined for an empty one. */
export function parseProjection(
  spec: Record<string, unknown> | undefined,
  filter: Record<string, unknown> | undefined,
): Projection | undefined {
  if (!spec || Object.keys(spec).length === 0) return undefined;
  return new Projection(spec, filter);
}
