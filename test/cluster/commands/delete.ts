/**
 * `delete`: each statement `{q, limit, hint, collation}` removes the first matching document
 * (`limit: 1`) or all of them (`limit: 0`) through the instance; reply `{n, writeErrors?}`.
 */
import { BSON } from 'bson';
import { ServerError } from '../errors.js';
import { promoted } from '../raw.js';
import { matchDocuments } from '../query/find.js';
import type { DocEntry } from '../storage/collection.js';
import { DocNode, type Leaf } from '../query/update/tree.js';
import { Args } from './args.js';
import { checkBatchSize, rawArgumentDocuments, toWriteError, type WriteError } from './crud.js';
import { defineCommand } from './registry.js';
import { timeseriesView } from '../storage/timeseries.js';
import { Collation } from '../collation/collation.js';
import { deleteMeasurements } from './timeseries/writes.js';
import { requireObject, statementField } from './write-ops.js';

const STATEMENT_FIELDS = new Set(['q', 'limit', 'hint', 'collation']);

function parseDeleteStatement(raw: Buffer): { stmt: DocNode; q: Leaf; limit: number } {
  const stmt = DocNode.parse(raw);
  for (const field of stmt.names) {
    if (!STATEMENT_FIELDS.has(field)) throw new ServerError('IDLUnknownField', `BSON field 'delete.deletes.${field}' is an unknown field.`);
  }
  const q = requireObject('delete.deletes.q', statementField(stmt, 'q'), true)!;
  const limitLeaf = statementField(stmt, 'limit');
  if (limitLeaf === undefined)
    throw new ServerError('IDLFailedToParse', "BSON field 'delete.deletes.limit' is missing but a required field");
  const limit = Number(limitLeaf.promoted());
  if (limit !== 0 && limit !== 1) {
    throw new ServerError('FailedToParse', `The limit field in delete objects must be 0 or 1. Got ${String(limitLeaf.promoted())}`);
  }
  return { stmt, q, limit };
}

defineCommand({
  name: 'delete',
  handler: (ctx) => {
    const { instance, body, db, op } = ctx;
    const args = new Args('delete', body);
    const name = args.requiredString('delete');
    const ordered = args.boolean('ordered') ?? true;
    const variables = args.object('let');
    const statements = rawArgumentDocuments(ctx, 'deletes');
    checkBatchSize(statements.length);
    // The command parser checks every statement before any runs (errors fail the command).
    const parsed = statements.map((raw) => parseDeleteStatement(raw));
    const series = timeseriesView(instance.catalog, db, name);
    const collection = series ? undefined : instance.catalog.collection(db, name); // a view fails here, as in mongod
    const writeErrors: WriteError[] = [];
    let n = 0;
    for (let i = 0; i < statements.length; i++) {
      try {
        const { stmt, q, limit } = parsed[i];
        const hint = statementField(stmt, 'hint')?.promoted() as string | Record<string, unknown> | undefined;
        const filter = BSON.deserialize(q.bytes, promoted);
        if (series) {
          n += deleteMeasurements(instance, op, series, filter, limit);
          continue;
        }
        const collation = Collation.effective(statementField(stmt, 'collation')?.promoted(), collection?.options.collation);
        const pull = matchDocuments(collection, { filter, hint, variables, collation });
        const doomed: DocEntry[] = [];
        for (let m = pull(); m; m = pull()) {
          doomed.push(m.entry);
          if (limit === 1) break;
        }
        for (const entry of doomed) {
          instance.deleteDocument(op, collection!, entry);
          n++;
        }
      } catch (e) {
        writeErrors.push(toWriteError(i, e));
        if (ordered) break;
      }
    }
    return writeErrors.length > 0 ? { n, writeErrors } : { n };
  },
});
