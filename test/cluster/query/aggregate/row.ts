/**
 * A document flowing through an aggregation pipeline: raw bytes from storage until a stage needs
 * its values (then decoded once, promoted for mingo), or a stage's JS result (then encoded once,
 * reusing the bytes of the document it came from wherever values did not change).
 */
import { BSON } from 'bson';
import { promoted, serialize } from '../../raw.js';
import { reencodeDocument } from '../reencode.js';
import { DocNode } from '../update/tree.js';

export class Row {
  private constructor(
    private rawBytes: Buffer | undefined,
    private value: Record<string, unknown> | undefined,
    /** The row this one was computed from, whose bytes unchanged values reuse. */
    private readonly base: Row | undefined,
  ) {}

  /** A stored document; `doc` is its promoted form when the caller already decoded it. */
  static fromRaw(raw: Buffer, doc?: Record<string, unknown>): Row {
    return new Row(raw, doc, undefined);
  }

  /** A stage's result; `base` is the input it was computed from (when one input gives one output). */
  static fromDoc(doc: Record<string, unknown>, base?: Row): Row {
    return new Row(undefined, doc, base);
  }

  get raw(): Buffer {
    if (!this.rawBytes) {
      this.rawBytes = this.base ? reencodeDocument(this.value!, DocNode.parse(this.base.raw)).toBuffer() : serialize(this.value!);
    }
    return this.rawBytes;
  }

  /** The promoted values (decoded on first use). */
  get doc(): Record<string, unknown> {
    return (this.value ??= BSON.deserialize(this.rawBytes!, promoted));
  }
}

/** Pulls the next row of a stage's output; undefined at the end. */
export type Pull = () => Row | undefined;

/** Everything a pull yields, in order. */
export function drain(pull: Pull): Row[] {
  const rows: Row[] = [];
  for (let row = pull(); row; row = pull()) rows.push(row);
  return rows;
}

/** A pull over a list. */
export function pullFrom(rows: Row[]): Pull {
  let i = 0;
  return () => rows[i++];
}
