/**
 * One update specification (`u` of an update statement or findAndModify), compiled once and
 * applied to each matching document: operator-style, replacement or pipeline, as mongod decides
 * from its shape (a first field starting with `$` means operators; an array means a pipeline).
 */
import { BSON, ObjectId, type Timestamp } from 'bson';
import { ServerError } from '../../errors.js';
import { promoted } from '../../raw.js';
import { describeElement } from '../../storage/keys.js';
import { matchedArrayIndex } from '../positional.js';
import { applyModifierPlan } from './apply.js';
import { ArrayFilters } from './array-filters.js';
import { describeDiff } from './diff.js';
import type { UpdateDescription } from './log.js';
import type { ApplyEnv } from './modifiers.js';
import { type ModifierPlan, parseModifierUpdate } from './plan.js';
import { PipelineUpdate } from './pipeline.js';
import { checkIdType, checkTopLevelNames, idFirst, replaceWhole } from './replace.js';
import { BsonType, DocNode, Leaf, typedOf } from './tree.js';
import { upsertBase } from './upsert.js';

export interface UpdateOptions {
  /** `arrayFilters` (promoted). */
  arrayFilters?: unknown[];
  /** Variables for pipeline updates (`c` of the statement and the command's `let`). */
  variables?: Record<string, unknown>;
}

/** The instant of one write, shared by every document it changes. */
export interface WriteClock {
  now: Date;
  timestamp: Timestamp;
}

export interface UpdatedDocument {
  raw: Buffer;
  /** The change-stream description; undefined when the write replaces the whole document. */
  description: UpdateDescription | undefined;
}

export type UpdateKind = 'modifiers' | 'replacement' | 'pipeline';

export class CompiledUpdate {
  private constructor(
    readonly kind: UpdateKind,
    private readonly spec: Leaf,
    private readonly plan: ModifierPlan | undefined,
    private readonly pipeline: PipelineUpdate | undefined,
    private readonly arrayFilters: ArrayFilters,
  ) {}

  /** Parses `u` (raw) with mongod's errors; throws before anything is written. */
  static compile(u: Leaf, options: UpdateOptions = {}): CompiledUpdate {
    const arrayFilters = new ArrayFilters(options.arrayFilters);
    if (u.type === BsonType.Array) {
      if (options.arrayFilters && options.arrayFilters.length > 0) {
        throw new ServerError('FailedToParse', 'arrayFilters may not be specified for pipeline-style updates');
      }
      const stages = Object.values(BSON.deserialize(u.bytes, promoted));
      return new CompiledUpdate('pipeline', u, undefined, new PipelineUpdate(stages, options.variables), arrayFilters);
    }
    if (u.type !== BsonType.Object) {
      throw new ServerError('FailedToParse', 'Update argument must be either an object or an array');
    }
    const doc = DocNode.parse(u.bytes);
    if (doc.length > 0 && doc.names[0].startsWith('$')) {
      return new CompiledUpdate('modifiers', u, parseModifierUpdate(doc, arrayFilters), undefined, arrayFilters);
    }
    if (options.arrayFilters && options.arrayFilters.length > 0) {
      throw new ServerError('FailedToParse', 'arrayFilters may not be specified for replacement-style updates');
    }
    return new CompiledUpdate('replacement', u, undefined, undefined, arrayFilters);
  }

  private env(root: DocNode, clock: WriteClock, insert: boolean): ApplyEnv {
    const id = root.get('_id');
    return { idText: id ? describeElement('_id', typedOf(id)) : 'no id', insert, now: clock.now, timestamp: clock.timestamp };
  }

  /**
   * Applies the update to a stored document; `filter` (promoted) resolves a positional `$`.
   * Undefined when the document would not change (mongod then writes nothing).
   */
  apply(doc: Buffer, filter: Record<string, unknown> | undefined, clock: WriteClock): UpdatedDocument | undefined {
    const root = DocNode.parse(doc);
    const originalId = root.get('_id') as Leaf;
    if (this.plan) {
      let promotedDoc: Record<string, unknown> | undefined;
      const applied = applyModifierPlan(this.plan, root, {
        env: this.env(root, clock, false),
        arrayFilters: this.arrayFilters,
        matchedIndex: (path) => matchedArrayIndex(filter, (promotedDoc ??= BSON.deserialize(doc, promoted)), path.join('.')),
      });
      return applied && { raw: applied.raw, description: applied.description };
    }
    if (this.pipeline) {
      const result = this.pipeline.run(root);
      const raw = replaceWhole(result, originalId, true).toBuffer();
      if (raw.equals(doc)) return undefined;
      return { raw, description: describeDiff(DocNode.parse(doc), DocNode.parse(raw), raw.length) };
    }
    const raw = replaceWhole(DocNode.parse(this.spec.bytes), originalId, false).toBuffer();
    return raw.equals(doc) ? undefined : { raw, description: undefined };
  }

  /** The document an upsert inserts when the query matched nothing (raw, `_id` first). */
  upsertDocument(query: Buffer, clock: WriteClock): { raw: Buffer; id: unknown } {
    let doc: DocNode;
    if (this.plan) {
      doc = upsertBase(query, false);
      const positional = () => {
        throw new ServerError('BadValue', 'The positional operator did not find the match needed from the query.');
      };
      applyModifierPlan(this.plan, doc, { env: this.env(doc, clock, true), arrayFilters: this.arrayFilters, matchedIndex: positional });
    } else if (this.pipeline) {
      const base = upsertBase(query, false);
      doc = this.pipeline.run(base);
      const baseId = base.get('_id');
      if (baseId && doc.indexOf('_id') < 0) {
        doc.names.unshift('_id');
        doc.values.unshift(baseId);
      }
    } else {
      doc = DocNode.parse(this.spec.bytes);
      checkTopLevelNames(doc);
      const baseId = upsertBase(query, true).get('_id');
      if (baseId && doc.indexOf('_id') < 0) {
        doc.names.unshift('_id');
        doc.values.unshift(baseId);
      }
    }
    if (doc.indexOf('_id') < 0) {
      doc.names.unshift('_id');
      doc.values.unshift(Leaf.of(new ObjectId()));
    }
    idFirst(doc);
    checkIdType(doc.values[0]);
    return { raw: doc.toBuffer(), id: typedOf(doc.values[0]) };
  }
}
