/**
 * Applying a parsed operator-style update to one document, as mongod's update nodes do: walk the
 * tree in field order, apply each modifier to the existing value or create the missing path,
 * expand `$`, `$[]` and `$[<id>]` against the document, refuse changes to `_id`, and log what
 * changed for the change stream. Returns undefined when nothing changed (a no-op writes nothing).
 */
import { ServerError } from '../../errors.js';
import { describeElement } from '../../storage/keys.js';
import type { ArrayFilters } from './array-filters.js';
import { UpdateLog, slotAtPath, type UpdateDescription } from './log.js';
import type { ApplyEnv, Modifier } from './modifiers.js';
import {
  ArrayUpdateNode,
  LeafUpdateNode,
  ObjectUpdateNode,
  comparePathParts,
  type ModifierPlan,
  type RenameSpec,
  type UpdateNode,
} from './plan.js';
import { DocNode, type Slot, arrayIndex, typedOf } from './tree.js';

export interface ModifierApplyOptions {
  env: ApplyEnv;
  arrayFilters: ArrayFilters;
  /** The array index the query matched (for `$`); undefined when the query matched none. */
  matchedIndex(arrayPath: string[]): number | undefined;
}

export interface AppliedUpdate {
  raw: Buffer;
  /** The change-stream `updateDescription`. */
  description: UpdateDescription;
  /** The edited tree (callers may inspect fields without decoding the bytes). */
  root: DocNode;
}

/** Where an existing element lives: its parent container and name; null for the document itself. */
type Loc = { parent: DocNode; key: string } | null;

const MAX_ARRAY_PADDING = 1_500_000;

class Applier {
  readonly log = new UpdateLog();
  private currentLog = this.log;
  /** Number of non-no-op modifications so far. */
  changes = 0;

  constructor(
    readonly root: DocNode,
    private readonly options: ModifierApplyOptions,
  ) {}

  private get env(): ApplyEnv {
    return this.options.env;
  }

  private element(loc: Loc): Slot {
    return loc ? loc.parent.get(loc.key)! : this.root;
  }

  private container(loc: Loc): DocNode | undefined {
    return loc ? loc.parent.child(loc.key) : this.root;
  }

  apply(node: UpdateNode, loc: Loc, taken: string[], toCreate: string[]): void {
    switch (node.kind) {
      case 'object':
        return this.applyObject(node, loc, taken, toCreate);
      case 'array':
        return this.applyArray(node, loc, taken, toCreate);
      default:
        return this.applyLeaf(node, loc, taken, toCreate);
    }
  }

  private applyObject(node: ObjectUpdateNode, loc: Loc, taken: string[], toCreate: string[]): void {
    let children = node.sorted();
    if (node.positional) {
      const index = toCreate.length > 0 ? undefined : this.options.matchedIndex(taken);
      if (index === undefined) {
        throw new ServerError('BadValue', 'The positional operator did not find the match needed from the query.');
      }
      const name = String(index);
      const concrete = node.children.get(name);
      const merged = concrete ? mergeNodes(concrete, node.positional, [...taken, name]) : node.positional;
      children = children.filter(([n]) => n !== name);
      children.push([name, merged]);
      children.sort(([a], [b]) => comparePathParts(a, b));
    }
    for (const [name, child] of children) {
      if (toCreate.length > 0) {
        this.apply(child, loc, taken, [...toCreate, name]);
        continue;
      }
      const container = this.container(loc);
      if (container && container.indexOf(name) >= 0) this.apply(child, { parent: container, key: name }, [...taken, name], []);
      else this.apply(child, loc, taken, [name]);
    }
  }

  private applyArray(node: ArrayUpdateNode, loc: Loc, taken: string[], toCreate: string[]): void {
    if (toCreate.length > 0) {
      throw new ServerError(
        'BadValue',
        `The path '${[...taken, ...toCreate].join('.')}' must exist in the document in order to apply array updates.`,
      );
    }
    const array = this.container(loc);
    if (!array || !array.isArray) {
      throw new ServerError(
        'BadValue',
        `Cannot apply array updates to non-array element ${describeElement(taken[taken.length - 1], typedOf(this.element(loc)))}`,
      );
    }
    // Which children apply to which element is decided before anything changes.
    const matching: { index: number; nodes: UpdateNode[] }[] = [];
    for (let i = 0; i < array.length; i++) {
      const nodes: UpdateNode[] = [];
      for (const [id, child] of node.children) {
        if (id === '' || this.options.arrayFilters.matches(id, array.values[i])) nodes.push(child);
      }
      if (nodes.length > 0) matching.push({ index: i, nodes });
    }
    // With more than one element selected, mongod logs the array (or the one element changed).
    const logAsWhole = matching.length > 1;
    const saved = this.currentLog;
    if (logAsWhole) this.currentLog = new UpdateLog();
    const modified: number[] = [];
    try {
      for (const { index, nodes } of matching) {
        const path = [...taken, String(index)];
        const merged = nodes.reduce((a, b) => mergeNodes(a, b, path));
        const before = this.changes;
        this.apply(merged, { parent: array, key: String(index) }, path, []);
        if (this.changes > before) modified.push(index);
      }
    } finally {
      this.currentLog = saved;
    }
    if (logAsWhole && modified.length > 1) this.currentLog.updated(taken);
    else if (logAsWhole && modified.length === 1) this.currentLog.updated([...taken, String(modified[0])]);
  }

  private applyLeaf(node: LeafUpdateNode, loc: Loc, taken: string[], toCreate: string[]): void {
    const modifier = node.modifier;
    if (modifier === null) return; // the source of a $rename: handled at its destination
    if ('from' in modifier) return this.applyRename(modifier, loc, taken, toCreate);
    if (modifier.insertOnly && !this.env.insert) return;
    if (toCreate.length === 0) return this.modifyExisting(modifier, loc!, taken);
    if (!modifier.create) {
      if (!modifier.allowNonViablePath) this.checkViability(loc, taken, toCreate);
      return;
    }
    this.create(loc, taken, toCreate, modifier.create({ path: [...taken, ...toCreate], inArray: false }, this.env));
  }

  private modifyExisting(modifier: Modifier, loc: { parent: DocNode; key: string }, path: string[]): void {
    const current = loc.parent.get(loc.key)!;
    const outcome = modifier.modify(current, { path, inArray: loc.parent.isArray }, this.env);
    if (outcome.kind === 'noop') return;
    this.checkImmutable(path);
    this.changes++;
    if (outcome.kind === 'remove') {
      loc.parent.remove(loc.key);
      this.currentLog.removed(path);
      return;
    }
    loc.parent.set(loc.key, outcome.value);
    if (outcome.appendedFrom !== undefined && outcome.value instanceof DocNode) {
      for (let i = outcome.appendedFrom; i < outcome.value.length; i++) this.currentLog.updated([...path, String(i)]);
    } else {
      this.currentLog.updated(path);
    }
  }

  private checkImmutable(path: string[]): void {
    if (!this.env.insert && path[0] === '_id') {
      throw new ServerError(
        'ImmutableField',
        `Performing an update on the path '${path.join('.')}' would modify the immutable field '_id'`,
      );
    }
  }

  /**
   * Walks from `loc` through the parts of `toCreate` that exist by now (an earlier sibling may
   * have created them): the deepest existing container and what remains to create.
   */
  private deepest(loc: Loc, taken: string[], toCreate: string[]): { loc: Loc; taken: string[]; rest: string[] } {
    let current = loc;
    const path = [...taken];
    const rest = [...toCreate];
    while (rest.length > 0) {
      const container = this.container(current);
      if (!container || container.indexOf(rest[0]) < 0) break;
      current = { parent: container, key: rest[0] };
      path.push(rest.shift()!);
    }
    return { loc: current, taken: path, rest };
  }

  private notViable(loc: Loc, taken: string[], part: string): ServerError {
    const name = taken[taken.length - 1];
    return new ServerError(
      'PathNotViable',
      `Cannot create field '${part}' in element {${describeElement(name, typedOf(this.element(loc)))}}`,
    );
  }

  private create(start: Loc, startTaken: string[], toCreate: string[], value: Slot): void {
    const { loc, taken, rest } = this.deepest(start, startTaken, toCreate);
    const fullPath = [...taken, ...rest];
    if (!this.env.insert && fullPath[0] === '_id') {
      throw new ServerError(
        'ImmutableField',
        `Updating the path '${fullPath.join('.')}' to ${describeElement(rest[rest.length - 1], typedOf(value))} would modify the immutable field '_id'`,
      );
    }
    const container = this.container(loc);
    if (!container) throw this.notViable(loc, taken, rest[0]);
    if (container.isArray) {
      const index = arrayIndex(rest[0]);
      if (index === undefined) throw this.notViable(loc, taken, rest[0]);
      if (index - container.length > MAX_ARRAY_PADDING) {
        throw new ServerError('CannotBackfillArray', `can't backfill more than ${MAX_ARRAY_PADDING} elements`);
      }
    }
    let slot = value;
    for (let i = rest.length - 1; i >= 1; i--) slot = new DocNode(false, [rest[i]], [slot]);
    container.set(rest[0], slot);
    if (!loc && rest[0].startsWith('$')) {
      throw new ServerError(
        'DollarPrefixedFieldName',
        `The dollar ($) prefixed field '${rest[0]}' in '${rest[0]}' is not allowed in the context of an update's replacement document. Consider using an aggregation pipeline with $replaceWith.`,
      );
    }
    this.changes++;
    this.currentLog.updated([...taken, rest[0]]);
  }

  /** Modifiers that create nothing still fail on a path that could never exist (mongod's viability check). */
  private checkViability(start: Loc, startTaken: string[], toCreate: string[]): void {
    const { loc, taken, rest } = this.deepest(start, startTaken, toCreate);
    const container = this.container(loc);
    if (container && (!container.isArray || arrayIndex(rest[0]) !== undefined)) return;
    const name = taken[taken.length - 1];
    throw new ServerError(
      'PathNotViable',
      `Cannot use the part (${rest[0]}) of (${[...taken, ...rest].join('.')}) to traverse the element ({${describeElement(name, typedOf(this.element(loc)))}})`,
    );
  }

  private applyRename(rename: RenameSpec, loc: Loc, taken: string[], toCreate: string[]): void {
    const from = rename.from;
    // Find the source; through arrays it is an error, missing it is a no-op.
    let node: DocNode = this.root;
    const idText = this.env.idText;
    for (let i = 0; i < from.length - 1; i++) {
      const slot = node.get(from[i]);
      if (slot === undefined) return;
      const next = node.child(from[i]);
      if (!next) {
        throw new ServerError(
          'PathNotViable',
          `cannot use the part (${from[i + 1]} of ${from.join('.')}) to traverse the element ({${describeElement(from[i], typedOf(slot))}})`,
        );
      }
      if (next.isArray) {
        throw new ServerError(
          'BadValue',
          `The source field cannot be an array element, '${from.join('.')}' in doc with ${idText} has an array field called '${from[i]}'`,
        );
      }
      node = next;
    }
    const value = node.get(from[from.length - 1]);
    if (value === undefined) return;
    const to = [...taken, ...toCreate];
    // The destination may not go through an array either.
    let probe: DocNode | undefined = this.root;
    for (let i = 0; i < to.length - 1 && probe; i++) {
      probe = probe.child(to[i]);
      if (probe?.isArray) {
        throw new ServerError(
          'BadValue',
          `The destination field cannot be an array element, '${to.join('.')}' in doc with ${idText} has an array field called '${to[i]}'`,
        );
      }
    }
    if (toCreate.length === 0) {
      this.modifyExisting({ operator: '$rename', modify: () => ({ kind: 'set', value }) }, loc!, taken);
    } else {
      this.create(loc, taken, toCreate, value);
    }
    this.checkImmutable(from);
    node.remove(from[from.length - 1]);
    this.changes++;
    this.currentLog.removed(from);
  }
}

/** Merges two update nodes that apply to the same element ($[] and $[id], or $ and a concrete index). */
export function mergeNodes(a: UpdateNode, b: UpdateNode, path: string[]): UpdateNode {
  if (a.kind === 'leaf' || b.kind === 'leaf' || a.kind !== b.kind) {
    throw new ServerError('ConflictingUpdateOperators', `Update created a conflict at '${path.join('.')}'`);
  }
  if (a.kind === 'object' && b.kind === 'object') {
    const merged = new ObjectUpdateNode();
    for (const [name, child] of a.children) merged.children.set(name, child);
    for (const [name, child] of b.children) {
      const other = merged.children.get(name);
      merged.children.set(name, other ? mergeNodes(other, child, [...path, name]) : child);
    }
    if (a.positional && b.positional) merged.positional = mergeNodes(a.positional, b.positional, [...path, '$']);
    else merged.positional = a.positional ?? b.positional;
    return merged;
  }
  const merged = new ArrayUpdateNode();
  for (const [id, child] of (a as ArrayUpdateNode).children) merged.children.set(id, child);
  for (const [id, child] of (b as ArrayUpdateNode).children) {
    const other = merged.children.get(id);
    merged.children.set(id, other ? mergeNodes(other, child, path) : child);
  }
  return merged;
}

/** Applies the update to a document tree in place; undefined when it changed nothing. */
export function applyModifierPlan(plan: ModifierPlan, root: DocNode, options: ModifierApplyOptions): AppliedUpdate | undefined {
  const applier = new Applier(root, options);
  applier.apply(plan.root, null, [], []);
  if (applier.changes === 0) return undefined;
  return { raw: root.toBuffer(), description: applier.log.describe(root), root };
}

export { slotAtPath };
