/**
 * The B+tree a collection keeps its documents in (by `_id` and by record id, and a collated unique
 * index its keys): sorted keys, O(1) copy-on-write clones for transaction snapshots, cheap appends.
 *
 * Why not a library's (sorted-btree, used before): a bulk load inserts each partition's documents
 * in ascending `_id` order at its own frontier, and records in ascending record ids; there an
 * insert cost ~250–400 ns in tree mechanics alone (array splices, and a key shifted into the left
 * sibling on every insert into a full leaf), 41% of the destination's CPU over a copy. Here each
 * child is routed by its smallest key, so a key past a leaf's last is pushed onto that leaf, and a
 * full leaf that grows at its end keeps its keys and starts a new one: appends touch one array
 * slot and leave leaves full (bench/RESULTS.md, 2026-11-29 late).
 *
 * Deletes never merge nodes (an emptied one is unlinked): a half-empty leaf costs memory only.
 */

/** Keys or children per node. */
const MAX_NODE = 64;

/** A leaf: keys in ascending order and their values. */
class Leaf<K, V> {
  /** Set once another tree (a clone) may hold this node: it is copied before it is changed. */
  shared = false;
  constructor(
    public keys: K[],
    public values: V[],
  ) {}
}

/** An inner node: its children and each child's smallest key (the first one is never consulted). */
class Branch<K, V> {
  shared = false;
  constructor(
    public keys: K[],
    public children: Node<K, V>[],
  ) {}
}

type Node<K, V> = Leaf<K, V> | Branch<K, V>;

export class RecordTree<K, V> {
  private root: Node<K, V> = new Leaf<K, V>([], []);
  private count = 0;

  constructor(private readonly compare: (a: K, b: K) => number) {}

  get size(): number {
    return this.count;
  }

  /** A tree with the same entries; later changes to either do not show in the other. */
  clone(): RecordTree<K, V> {
    const copy = new RecordTree<K, V>(this.compare);
    this.root.shared = true;
    copy.root = this.root;
    copy.count = this.count;
    return copy;
  }

  get(key: K): V | undefined {
    const leaf = this.leafFor(key);
    const i = this.lowerBound(leaf.keys, key);
    return i < leaf.keys.length && this.compare(leaf.keys[i]!, key) === 0 ? leaf.values[i] : undefined;
  }

  has(key: K): boolean {
    const leaf = this.leafFor(key);
    const i = this.lowerBound(leaf.keys, key);
    return i < leaf.keys.length && this.compare(leaf.keys[i]!, key) === 0;
  }

  minKey(): K | undefined {
    let node = this.root;
    while (node instanceof Branch) node = node.children[0]!;
    return node.keys[0];
  }

  maxKey(): K | undefined {
    let node = this.root;
    while (node instanceof Branch) node = node.children[node.children.length - 1]!;
    return node.keys[node.keys.length - 1];
  }

  /**
   * Stores `value` at `key`. Returns true if the key is new; false if it was there, in which case
   * its value is replaced unless `overwrite` is false.
   */
  set(key: K, value: V, overwrite = true): boolean {
    let root = this.root;
    if (root.shared) root = this.root = copyOf(root);
    const split = this.insert(root, key, value, overwrite);
    if (split === NOT_ADDED) return false;
    if (split !== undefined) {
      this.root = new Branch<K, V>([firstKey(root), firstKey(split)], [root, split]);
    }
    this.count++;
    return true;
  }

  /** Removes `key`; returns whether it was there. */
  delete(key: K): boolean {
    if (this.root.shared) this.root = copyOf(this.root);
    if (this.remove(this.root, key) === Removal.NotFound) return false;
    this.count--;
    // A root with one child is that child (the tree's height shrinks as its nodes empty).
    while (this.root instanceof Branch && this.root.children.length === 1) this.root = this.root.children[0]!;
    return true;
  }

  /** Values in ascending key order. */
  *values(): IterableIterator<V> {
    const path: { node: Branch<K, V>; at: number }[] = [];
    let node = this.root;
    for (;;) {
      while (node instanceof Branch) {
        path.push({ node, at: 0 });
        node = node.children[0]!;
      }
      const values = node.values;
      for (let i = 0; i < values.length; i++) yield values[i]!;
      // Up to the nearest ancestor with a child to the right.
      let top = path[path.length - 1];
      while (top !== undefined && top.at === top.node.children.length - 1) {
        path.pop();
        top = path[path.length - 1];
      }
      if (top === undefined) return;
      node = top.node.children[++top.at]!;
    }
  }

  /**
   * Calls `visit` for each entry from `low` up to `high` (included when `includeHigh`), in order,
   * until it returns true.
   */
  forRange(low: K, high: K, includeHigh: boolean, visit: (key: K, value: V) => boolean): void {
    const compare = this.compare;
    const path: { node: Branch<K, V>; at: number }[] = [];
    let node = this.root;
    while (node instanceof Branch) {
      const at = this.childIndex(node, low);
      path.push({ node, at });
      node = node.children[at]!;
    }
    let leaf: Leaf<K, V> | undefined = node;
    let i = this.lowerBound(leaf.keys, low);
    while (leaf !== undefined) {
      const { keys, values } = leaf;
      const n = keys.length;
      const last = n === 0 ? -1 : compare(keys[n - 1]!, high);
      if (last < 0 || (last === 0 && includeHigh)) {
        // The whole leaf is in range: no comparison per key.
        for (; i < n; i++) if (visit(keys[i]!, values[i]!)) return;
      } else {
        for (; i < n; i++) {
          const c = compare(keys[i]!, high);
          if (c > 0 || (c === 0 && !includeHigh) || visit(keys[i]!, values[i]!)) return;
        }
      }
      leaf = undefined;
      // Up to the nearest ancestor with a child to the right, then down its leftmost edge.
      while (path.length > 0) {
        const top = path[path.length - 1]!;
        if (top.at < top.node.children.length - 1) {
          top.at++;
          let down = top.node.children[top.at]!;
          while (down instanceof Branch) {
            path.push({ node: down, at: 0 });
            down = down.children[0]!;
          }
          leaf = down;
          i = 0;
          break;
        }
        path.pop();
      }
    }
  }

  /** Entries in descending key order, from `highest` (or the largest key below it) or from the end. */
  *entriesReversed(highest?: K): IterableIterator<[K, V]> {
    const path: { node: Branch<K, V>; at: number }[] = [];
    let node = this.root;
    while (node instanceof Branch) {
      const at = highest === undefined ? node.children.length - 1 : this.childIndex(node, highest);
      path.push({ node, at });
      node = node.children[at]!;
    }
    let leaf: Leaf<K, V> | undefined = node;
    let i = highest === undefined ? leaf.keys.length - 1 : this.upperBound(leaf.keys, highest) - 1;
    while (leaf !== undefined) {
      for (; i >= 0; i--) yield [leaf.keys[i]!, leaf.values[i]!];
      leaf = undefined;
      // Up to the nearest ancestor with a child to the left, then down its rightmost edge.
      while (path.length > 0) {
        const top = path[path.length - 1]!;
        if (top.at > 0) {
          top.at--;
          let down = top.node.children[top.at]!;
          while (down instanceof Branch) {
            path.push({ node: down, at: down.children.length - 1 });
            down = down.children[down.children.length - 1]!;
          }
          leaf = down;
          i = leaf.keys.length - 1;
          break;
        }
        path.pop();
      }
    }
  }

  /** Index of the first key ≥ `key` (keys.length if none). */
  private lowerBound(keys: K[], key: K): number {
    const compare = this.compare;
    let lo = 0;
    let hi = keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compare(keys[mid]!, key) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Index of the first key > `key` (keys.length if none). */
  private upperBound(keys: K[], key: K): number {
    const compare = this.compare;
    let lo = 0;
    let hi = keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compare(keys[mid]!, key) <= 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** The child whose keys `key` falls among: the last one whose smallest key is ≤ `key` (or the first). */
  private childIndex(branch: Branch<K, V>, key: K): number {
    const at = this.upperBound(branch.keys, key) - 1;
    return at < 0 ? 0 : at;
  }

  private leafFor(key: K): Leaf<K, V> {
    let node = this.root;
    while (node instanceof Branch) node = node.children[this.childIndex(node, key)]!;
    return node;
  }

  /**
   * Puts the entry under `node` (not shared). Returns NOT_ADDED if the key was there, a new right
   * sibling if `node` split, undefined otherwise.
   */
  private insert(node: Node<K, V>, key: K, value: V, overwrite: boolean): Node<K, V> | typeof NOT_ADDED | undefined {
    if (node instanceof Leaf) {
      const keys = node.keys;
      const n = keys.length;
      // Past the last key (the commonest case in a load): no search.
      const i = n === 0 || this.compare(keys[n - 1]!, key) < 0 ? n : this.lowerBound(keys, key);
      if (i < n && this.compare(keys[i]!, key) === 0) {
        if (overwrite) node.values[i] = value;
        return NOT_ADDED;
      }
      if (n < MAX_NODE) {
        insertAt(keys, i, key);
        insertAt(node.values, i, value);
        return undefined;
      }
      if (i === n) return new Leaf<K, V>([key], [value]);
      const right = new Leaf<K, V>(keys.splice(n >> 1), node.values.splice(n >> 1));
      if (i <= n >> 1) {
        insertAt(keys, i, key);
        insertAt(node.values, i, value);
      } else {
        insertAt(right.keys, i - (n >> 1), key);
        insertAt(right.values, i - (n >> 1), value);
      }
      return right;
    }
    // At or past the last child's smallest key (appends): no search.
    const last = node.keys.length - 1;
    const at = this.compare(node.keys[last]!, key) <= 0 ? last : this.childIndex(node, key);
    let child = node.children[at]!;
    if (child.shared) child = node.children[at] = copyOf(child);
    const split = this.insert(child, key, value, overwrite);
    if (split === NOT_ADDED) return NOT_ADDED;
    // A new smallest key of the whole tree lands in the first child, whose key is never consulted.
    if (split === undefined) return undefined;
    const n = node.children.length;
    if (n < MAX_NODE) {
      insertAt(node.keys, at + 1, firstKey(split));
      insertAt(node.children, at + 1, split);
      return undefined;
    }
    if (at === n - 1) return new Branch<K, V>([firstKey(split)], [split]);
    const right = new Branch<K, V>(node.keys.splice(n >> 1), node.children.splice(n >> 1));
    if (at + 1 <= n >> 1) {
      insertAt(node.keys, at + 1, firstKey(split));
      insertAt(node.children, at + 1, split);
    } else {
      insertAt(right.keys, at + 1 - (n >> 1), firstKey(split));
      insertAt(right.children, at + 1 - (n >> 1), split);
    }
    return right;
  }

  /** Takes `key` out of `node` (not shared). Emptied children are unlinked from their parents. */
  private remove(node: Node<K, V>, key: K): Removal {
    if (node instanceof Leaf) {
      const i = this.lowerBound(node.keys, key);
      if (i >= node.keys.length || this.compare(node.keys[i]!, key) !== 0) return Removal.NotFound;
      node.keys.splice(i, 1);
      node.values.splice(i, 1);
      return node.keys.length === 0 ? Removal.Emptied : Removal.Removed;
    }
    const at = this.childIndex(node, key);
    let child = node.children[at]!;
    if (child.shared) child = node.children[at] = copyOf(child);
    const removal = this.remove(child, key);
    if (removal !== Removal.Emptied) return removal;
    if (node.children.length === 1) return Removal.Emptied;
    node.keys.splice(at, 1);
    node.children.splice(at, 1);
    return Removal.Removed;
  }
}

const NOT_ADDED = Symbol('not added');

const enum Removal {
  NotFound,
  Removed,
  /** The node holds no key any more: its parent unlinks it if it has others. */
  Emptied,
}

function insertAt<T>(array: T[], at: number, item: T): void {
  if (at === array.length) array.push(item);
  else array.splice(at, 0, item);
}

function firstKey<K, V>(node: Node<K, V>): K {
  return node.keys[0]!;
}

/** A private copy of a shared node; its children become shared by both. */
function copyOf<K, V>(node: Node<K, V>): Node<K, V> {
  if (node instanceof Leaf) return new Leaf(node.keys.slice(), node.values.slice());
  for (const child of node.children) child.shared = true;
  return new Branch(node.keys.slice(), node.children.slice());
}
