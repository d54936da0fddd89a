/**
 * `update`: each statement `{q, u, upsert, multi, arrayFilters, hint, collation, c, sort}` runs in
 * order (stopping at the first error when `ordered`), matched documents are changed through the
 * instance, an upsert inserts when nothing matched. Reply `{n, nModified, upserted?, writeErrors?}`.
 */
import { BSON } from 'bson';
import { ServerError } from '../errors.js';
import { promoted } from '../raw.js';
import { matchDocuments, type Match } from '../query/find.js';
import { CompiledUpdate } from '../query/update/compile.js';
import { DocNode, type Leaf } from '../query/update/tree.js';
import { Args } from './args.js';
import { checkBatchSize, rawArgumentDocuments, toWriteError, type WriteError } from './crud.js';
import { defineCommand } from './registry.js';
import { timeseriesView } from '../storage/timeseries.js';
import { Collation } from '../collation/collation.js';
import { updateMeasurements } from './timeseries/writes.js';
import { insertUpserted, requireObject, statementField, updateEntry, writeClock, type WriteTarget } from './write-ops.js';

const STATEMENT_FIELDS = new Set(['q', 'u', 'upsert', 'multi', 'arrayFilters', 'hint', 'collation', 'c', 'sort', 'upsertSupplied']);

/** A parsed update statement. */
export interface UpdateStatement {
  query: Buffer;
  filter: Record<string, unknown>;
  update: CompiledUpdate;
  upsert: boolean;
  multi: boolean;
  hint?: string | Record<string, unknown>;
  sort?: Record<string, unknown>;
  /** The statement's `collation` as sent (undefined: the collection's default). */
  collation?: unknown;
}

function decode(leaf: Leaf | undefined): unknown {
  return leaf === undefined ? undefined : leaf.promoted();
}

function booleanField(name: string, leaf: Leaf | undefined): boolean {
  if (leaf === undefined) return false;
  const v = leaf.promoted();
  if (typeof v === 'boolean') return v;
  if (typeof v === 'number') return v !== 0;
  throw new ServerError('TypeMismatch', `BSON field '${name}' is the wrong type, expected type 'bool'`);
}

/** The checks mongod's command parser makes on a statement (failing the whole command). */
function checkStatementShape(stmt: DocNode): { q: Leaf; u: Leaf } {
  for (const name of stmt.names) {
    if (!STATEMENT_FIELDS.has(name)) throw new ServerError('IDLUnknownField', `BSON field 'update.updates.${name}' is an unknown field.`);
  }
  const q = requireObject('update.updates.q', statementField(stmt, 'q'), true)!;
  const u = statementField(stmt, 'u');
  if (u === undefined) throw new ServerError('IDLFailedToParse', "BSON field 'update.updates.u' is missing but a required field");
  if (u.type !== 0x03 && u.type !== 0x04) {
    throw new ServerError('TypeMismatch', "BSON field 'update.updates.u' is the wrong type, expected types '[object, array]'");
  }
  return { q, u };
}

/** Parses one raw statement of an `update` command. */
export function parseUpdateStatement(raw: Buffer, variables: Record<string, unknown> | undefined): UpdateStatement {
  const stmt = DocNode.parse(raw);
  const { q, u } = checkStatementShape(stmt);
  const arrayFilters = decode(statementField(stmt, 'arrayFilters'));
  if (arrayFilters !== undefined && !Array.isArray(arrayFilters)) {
    throw new ServerError('TypeMismatch', "BSON field 'update.updates.arrayFilters' is the wrong type, expected type 'array'");
  }
  const constants = decode(statementField(stmt, 'c')) as Record<string, unknown> | undefined;
  const update = CompiledUpdate.compile(u, { arrayFilters, variables: { ...variables, ...constants } });
  const multi = booleanField('update.updates.multi', statementField(stmt, 'multi'));
  if (multi && update.kind === 'replacement') {
    throw new ServerError('FailedToParse', 'multi update is not supported for replacement-style update');
  }
  if (constants !== undefined && update.kind !== 'pipeline') {
    throw new ServerError(51198, 'Constant values may only be specified for pipeline updates');
  }
  const hint = decode(statementField(stmt, 'hint')) as UpdateStatement['hint'];
  return {
    query: q.bytes,
    filter: BSON.deserialize(q.bytes, promoted),
    update,
    upsert: booleanField('update.updates.upsert', statementField(stmt, 'upsert')),
    multi,
    hint,
    sort: decode(statementField(stmt, 'sort')) as Record<string, unknown> | undefined,
    collation: decode(statementField(stmt, 'collation')),
  };
}

defineCommand({
  name: 'update',
  handler: (ctx) => {
    const { instance, body, db, op } = ctx;
    const args = new Args('update', body);
    const name = args.requiredString('update');
    const ordered = args.boolean('ordered') ?? true;
    const bypass = args.boolean('bypassDocumentValidation') ?? false;
    const variables = args.object('let');
    const statements = rawArgumentDocuments(ctx, 'updates');
    checkBatchSize(statements.length);
    for (const raw of statements) checkStatementShape(DocNode.parse(raw));
    const series = timeseriesView(instance.catalog, db, name);
    const existing = series ? undefined : instance.catalog.collection(db, name); // a view fails here, as in mongod
    const writeErrors: WriteError[] = [];
    const upserted: { index: number; _id: unknown }[] = [];
    let n = 0;
    let nModified = 0;
    for (let i = 0; i < statements.length; i++) {
      try {
        if (series) {
          const counted = updateMeasurements(instance, op, series, statements[i], bypass, (raw) => parseUpdateStatement(raw, variables));
          n += counted.n;
          nModified += counted.nModified;
          continue;
        }
        const stmt = parseUpdateStatement(statements[i], variables);
        const collection = existing ?? instance.catalog.collection(db, name);
        const clock = writeClock(instance);
        const collation = Collation.effective(stmt.collation, collection?.options.collation);
        const pull = matchDocuments(collection, { filter: stmt.filter, hint: stmt.hint, sort: stmt.sort, variables, collation });
        const targets: Match[] = [];
        for (let m = pull(); m; m = pull()) {
          targets.push(m);
          if (!stmt.multi) break;
        }
        if (targets.length > 0) {
          const target: WriteTarget = { instance, op, collection: collection!, bypassDocumentValidation: bypass };
          for (const m of targets) {
            const modified = updateEntry(target, m.entry, stmt.update, stmt.filter, clock);
            n++;
            if (modified) nModified++;
          }
        } else if (stmt.upsert) {
          const doc = insertUpserted(
            { instance, op, bypassDocumentValidation: bypass, db, collectionName: name },
            stmt.update,
            stmt.query,
            clock,
          );
          n++;
          upserted.push({ index: i, _id: doc.id });
        }
      } catch (e) {
        writeErrors.push(toWriteError(i, e));
        if (ordered) break;
      }
    }
    const reply: Record<string, unknown> = { n, nModified };
    if (upserted.length > 0) reply.upserted = upserted;
    if (writeErrors.length > 0) reply.writeErrors = writeErrors;
    return reply;
  },
});
