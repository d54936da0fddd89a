/**
 * Parsing an operator-style update (`{$set: {...}, $inc: {...}}`) into mongod's update tree: one
 * node per path component, children applied in field-name order (numeric names numerically, as
 * mongod ≥ 5 does), `$` positional children, `$[]` / `$[<id>]` array nodes, and the modifier at
 * each leaf. Two paths where one is a prefix of the other conflict, as in mongod.
 */
import { ServerError } from '../../errors.js';
import { describeValue } from '../../storage/keys.js';
import { type ArrayFilters } from './array-filters.js';
import { FIELD_OPERATORS, createModifier, type Modifier } from './modifiers.js';
import { BsonType, DocNode, Leaf, arrayIndex, toLeaf, typeName } from './tree.js';

/** `$rename` at its destination: moves the value found at `from` (a no-op when it is missing). */
export interface RenameSpec {
  from: string[];
}

export class LeafUpdateNode {
  readonly kind = 'leaf' as const;
  constructor(
    /** The operator, a rename, or null for the placeholder that reserves a rename's source path. */
    readonly modifier: Modifier | RenameSpec | null,
  ) {}
}

export class ObjectUpdateNode {
  readonly kind = 'object' as const;
  readonly children = new Map<string, UpdateNode>();
  /** The child under a `$` component (resolved to the query's matched array index). */
  positional: UpdateNode | undefined;

  /** Children in the order mongod applies them. */
  sorted(): [string, UpdateNode][] {
    return [...this.children].sort(([a], [b]) => comparePathParts(a, b));
  }
}

export class ArrayUpdateNode {
  readonly kind = 'array' as const;
  /** '' for `$[]` (every element), else an array filter identifier. */
  readonly children = new Map<string, UpdateNode>();
}

export type UpdateNode = LeafUpdateNode | ObjectUpdateNode | ArrayUpdateNode;

/** mongod ≥ 5 applies fields in lexicographic order, numeric field names in numeric order. */
export function comparePathParts(a: string, b: string): number {
  const x = arrayIndex(a);
  const y = arrayIndex(b);
  if (x !== undefined && y !== undefined) return x - y;
  return a < b ? -1 : a > b ? 1 : 0;
}

function conflict(path: string, at: string[]): ServerError {
  return new ServerError('ConflictingUpdateOperators', `Updating the path '${path}' would create a conflict at '${at.join('.')}'`);
}

function arrayFilterIdentifier(part: string): string | undefined {
  return part.startsWith('$[') && part.endsWith(']') ? part.slice(2, -1) : undefined;
}

/** Splits and checks an update path as mongod's field checker does. */
export function parseUpdatePath(path: string): string[] {
  if (path.length === 0) throw new ServerError('EmptyFieldName', 'An empty update path is not valid.');
  const parts = path.split('.');
  if (parts.some((p) => p.length === 0)) {
    throw new ServerError('EmptyFieldName', `The update path '${path}' contains an empty field name, which is not allowed.`);
  }
  return parts;
}

/** The parsed update: the tree plus the array filter identifiers it uses. */
export interface ModifierPlan {
  root: ObjectUpdateNode;
  /** True when some path has a `$` component (the query's matched index is needed). */
  positional: boolean;
}

class PlanBuilder {
  readonly root = new ObjectUpdateNode();
  positional = false;
  readonly usedFilters = new Set<string>();

  constructor(private readonly arrayFilters: ArrayFilters) {}

  add(path: string, leaf: LeafUpdateNode, dynamicAllowed = true): void {
    const parts = parseUpdatePath(path);
    let positionalCount = 0;
    parts.forEach((part, i) => {
      const id = arrayFilterIdentifier(part);
      if (part !== '$' && id === undefined) return;
      if (!dynamicAllowed) return;
      if (i === 0) {
        throw new ServerError(
          'BadValue',
          part === '$'
            ? `Cannot have positional (i.e. '$') element in the first position in path '${path}'`
            : `Cannot have array filter identifier (i.e. '$[<id>]') element in the first position in path '${path}'`,
        );
      }
      if (part === '$') {
        positionalCount++;
        this.positional = true;
      } else if (id !== '') {
        if (!this.arrayFilters.has(id!)) {
          throw new ServerError('BadValue', `No array filter found for identifier '${id}' in path '${path}'`);
        }
        this.usedFilters.add(id!);
      }
    });
    if (positionalCount > 1) {
      throw new ServerError('BadValue', `Too many positional (i.e. '$') elements found in path '${path}'`);
    }

    let node: ObjectUpdateNode | ArrayUpdateNode = this.root;
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i];
      const last = i === parts.length - 1;
      const id = arrayFilterIdentifier(part);
      const nextIsArrayUpdate = !last && arrayFilterIdentifier(parts[i + 1]) !== undefined;
      let existing: UpdateNode | undefined;
      if (node.kind === 'array') {
        if (id === undefined) throw conflict(path, parts.slice(0, i));
        existing = node.children.get(id);
      } else {
        if (id !== undefined) throw conflict(path, parts.slice(0, i));
        existing = part === '$' ? node.positional : node.children.get(part);
      }
      if (last) {
        if (existing) throw conflict(path, parts.slice(0, i + 1));
        this.attach(node, part, id, leaf);
        return;
      }
      if (existing?.kind === 'leaf') throw conflict(path, parts.slice(0, i + 1));
      if (existing && (existing.kind === 'array') !== nextIsArrayUpdate) throw conflict(path, parts.slice(0, i + 1));
      const child: ObjectUpdateNode | ArrayUpdateNode = existing ?? (nextIsArrayUpdate ? new ArrayUpdateNode() : new ObjectUpdateNode());
      if (!existing) this.attach(node, part, id, child);
      node = child;
    }
  }

  private attach(node: ObjectUpdateNode | ArrayUpdateNode, part: string, id: string | undefined, child: UpdateNode): void {
    if (node.kind === 'array') node.children.set(id!, child);
    else if (part === '$') node.positional = child;
    else node.children.set(part, child);
  }
}

function renameSpec(builder: PlanBuilder, from: string, to: Leaf): void {
  if (to.type !== BsonType.String) {
    throw new ServerError('BadValue', `The 'to' field for $rename must be a string: ${from}: ${describeValue(to.typed())}`);
  }
  const target = to.typed() as string;
  const fromParts = parseUpdatePath(from);
  const toParts = parseUpdatePath(target);
  if (fromParts.some((p) => p === '$' || arrayFilterIdentifier(p) !== undefined)) {
    throw new ServerError('BadValue', `The source field for $rename may not be dynamic: ${from}`);
  }
  if (toParts.some((p) => p === '$' || arrayFilterIdentifier(p) !== undefined)) {
    throw new ServerError('BadValue', `The destination field for $rename may not be dynamic: ${target}`);
  }
  if (from === target) {
    throw new ServerError('BadValue', `The source and target field for $rename must differ: ${from}: ${JSON.stringify(target)}`);
  }
  const shorter = fromParts.length < toParts.length ? fromParts : toParts;
  const longer = shorter === fromParts ? toParts : fromParts;
  if (shorter.every((p, i) => longer[i] === p)) {
    throw new ServerError(
      'BadValue',
      `The source and target field for $rename must not be on the same path: ${from}: ${JSON.stringify(target)}`,
    );
  }
  builder.add(from, new LeafUpdateNode(null), false);
  builder.add(target, new LeafUpdateNode({ from: fromParts }), false);
}

/** Parses an operator-style update document (given raw) into its tree. */
export function parseModifierUpdate(update: DocNode, arrayFilters: ArrayFilters): ModifierPlan {
  const builder = new PlanBuilder(arrayFilters);
  for (let i = 0; i < update.length; i++) {
    const operator = update.names[i];
    const spec = toLeaf(update.values[i]);
    if (!FIELD_OPERATORS.has(operator) && operator !== '$rename') {
      throw new ServerError(
        'FailedToParse',
        `Unknown modifier: ${operator}. Expected a valid update modifier or pipeline-style update specified as an array`,
      );
    }
    if (spec.type !== BsonType.Object) {
      throw new ServerError(
        'FailedToParse',
        `Modifiers operate on fields but we found type ${typeName(spec.type)} instead. For example: {$mod: {<field>: ...}} not {${operator}: ${describeValue(spec.typed())}}`,
      );
    }
    const fields = DocNode.parse(spec.bytes);
    for (let j = 0; j < fields.length; j++) {
      const path = fields.names[j];
      const arg = toLeaf(fields.values[j]);
      if (operator === '$rename') renameSpec(builder, path, arg);
      else builder.add(path, new LeafUpdateNode(createModifier(operator, path, arg)));
    }
  }
  for (const id of arrayFilters.identifiers()) {
    if (!builder.usedFilters.has(id)) {
      throw new ServerError(
        'FailedToParse',
        `The array filter for identifier '${id}' was not used in the update ${describeValue(toLeaf(update).typed())}`,
      );
    }
  }
  return { root: builder.root, positional: builder.positional };
}
