/**
 * Pipeline-style updates (`u: [{$set: ...}, ...]`): mingo runs the stages mongod allows in an
 * update on the document; the result is re-encoded against the original (unchanged fields keep
 * their bytes), `_id` rules are those of a replacement, and the change is described by the delta
 * mongod would log.
 */
import { Aggregator } from '../../mingo.js';
import { BSON } from 'bson';
import { ServerError } from '../../errors.js';
import { promoted } from '../../raw.js';
import { reencodeDocument } from '../reencode.js';
import { DocNode } from './tree.js';

/** Stages mongod accepts in an update pipeline. */
const UPDATE_STAGES = new Set(['$addFields', '$set', '$project', '$unset', '$replaceRoot', '$replaceWith']);

export class PipelineUpdate {
  private readonly aggregator: Aggregator;

  constructor(stages: unknown[], variables: Record<string, unknown> | undefined) {
    for (const stage of stages) {
      if (stage === null || typeof stage !== 'object' || Array.isArray(stage)) {
        throw new ServerError('TypeMismatch', 'Each element of the update pipeline must be an object');
      }
      const names = Object.keys(stage);
      if (names.length !== 1) {
        throw new ServerError(40323, 'A pipeline stage specification object must contain exactly one field.');
      }
      if (!UPDATE_STAGES.has(names[0])) {
        throw new ServerError('InvalidOptions', `${names[0]} is not allowed to be used within an update`);
      }
    }
    this.aggregator = new Aggregator(stages as Record<string, unknown>[], { variables, scriptEnabled: false });
  }

  /** The new document (as a tree, `_id` not yet checked) for a stored document. */
  run(doc: Buffer | DocNode): DocNode {
    const original = doc instanceof DocNode ? doc : DocNode.parse(doc);
    const input = BSON.deserialize(doc instanceof DocNode ? doc.toBuffer() : doc, promoted);
    let output: unknown[];
    try {
      output = this.aggregator.run([input]);
    } catch (e) {
      throw new ServerError('FailedToParse', `Invalid update pipeline: ${(e as Error).message}`);
    }
    const result = output[0];
    if (result === null || typeof result !== 'object' || Array.isArray(result)) {
      throw new ServerError('BadValue', 'The update pipeline did not produce a document');
    }
    return reencodeDocument(result as Record<string, unknown>, original);
  }
}
