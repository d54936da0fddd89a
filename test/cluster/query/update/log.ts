/**
 * What an update changed, as a change stream reports it (`updateDescription`): built like
 * mongod's delta oplog entries. Operators log the path they targeted (an updated field, a created
 * field — the topmost created component —, a removed field, or `$push` appends as `arr.N`);
 * a path inside one already logged is covered by it. Values are read from the final document.
 */
import { DocNode, type Slot, typedOf } from './tree.js';

/** A change stream's `updateDescription` (mongod ≥ 5 without `disambiguatedPaths`). */
export interface UpdateDescription {
  updatedFields: Record<string, unknown>;
  removedFields: string[];
  truncatedArrays: { field: string; newSize: number }[];
}

type Entry = { path: string[]; removed: boolean };

export class UpdateLog {
  private readonly entries: Entry[] = [];

  /** A field set to a new value (or created, given up to its first new component). */
  updated(path: string[]): void {
    this.add({ path, removed: false });
  }

  removed(path: string[]): void {
    this.add({ path, removed: true });
  }

  get empty(): boolean {
    return this.entries.length === 0;
  }

  private add(entry: Entry): void {
    for (const e of this.entries) {
      if (!e.removed && isPrefix(e.path, entry.path)) return; // covered by a logged ancestor
    }
    // A newly logged ancestor covers what was logged below it.
    for (let i = this.entries.length - 1; i >= 0; i--) {
      if (isPrefix(entry.path, this.entries[i].path)) this.entries.splice(i, 1);
    }
    this.entries.push(entry);
  }

  /** The change-stream description, values read from the updated document. */
  describe(root: DocNode): UpdateDescription {
    const updatedFields: Record<string, unknown> = {};
    const removedFields: string[] = [];
    for (const e of this.entries) {
      const dotted = e.path.join('.');
      if (e.removed) {
        removedFields.push(dotted);
        continue;
      }
      const slot = slotAtPath(root, e.path);
      if (slot !== undefined) updatedFields[dotted] = typedOf(slot);
    }
    return { updatedFields, removedFields, truncatedArrays: [] };
  }
}

function isPrefix(prefix: string[], path: string[]): boolean {
  if (prefix.length > path.length) return false;
  for (let i = 0; i < prefix.length; i++) if (prefix[i] !== path[i]) return false;
  return true;
}

/** The value at a path of an edited document, undefined when absent. */
export function slotAtPath(root: DocNode, path: string[]): Slot | undefined {
  let node: DocNode | undefined = root;
  for (let i = 0; i < path.length - 1; i++) {
    node = node.child(path[i]);
    if (!node) return undefined;
  }
  return node.get(path[path.length - 1]);
}
