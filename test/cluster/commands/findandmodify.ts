/**
 * `findAndModify`: finds the first document matching `query` in `sort` order and removes it or
 * updates it (operators, replacement or pipeline; `upsert` when none matches), returning the
 * document before or (`new: true`) after the change, projected by `fields`. Reply `{lastErrorObject:
 * {n, updatedExisting, upserted?}, value}`; errors fail the whole command, as in mongod.
 */
import { ServerError } from '../errors.js';
import { RawDoc } from '../raw.js';
import { matchDocuments } from '../query/find.js';
import { Collation } from '../collation/collation.js';
import { parseProjection } from '../query/projection.js';
import { CompiledUpdate } from '../query/update/compile.js';
import { DocNode, toLeaf } from '../query/update/tree.js';
import { Args } from './args.js';
import { defineCommand } from './registry.js';
import { insertUpserted, updateEntry, writeClock } from './write-ops.js';

const EMPTY_DOCUMENT = Buffer.from([5, 0, 0, 0, 0]);

defineCommand({
  name: 'findAndModify',
  aliases: ['findandmodify'],
  handler: (ctx) => {
    const { instance, body, db, op, raw } = ctx;
    const command = Object.keys(body)[0];
    const args = new Args(command, body);
    const name = args.requiredString(command);
    const query = args.object('query') ?? {};
    const remove = args.boolean('remove') ?? false;
    const returnNew = args.boolean('new') ?? false;
    const upsert = args.boolean('upsert') ?? false;
    const bypass = args.boolean('bypassDocumentValidation') ?? false;
    const arrayFilters = args.array('arrayFilters');
    const variables = args.object('let');
    // `update` and `query` as sent (raw), so the values written keep their exact types.
    const fields = DocNode.parse(raw);
    const u = body.update === undefined ? undefined : toLeaf(fields.get('update')!);
    const queryRaw = fields.get('query') === undefined ? EMPTY_DOCUMENT : toLeaf(fields.get('query')!).bytes;
    if (remove) {
      if (u) throw new ServerError('FailedToParse', 'Cannot specify both an update and remove=true');
      if (upsert) throw new ServerError('FailedToParse', 'Cannot specify both upsert=true and remove=true');
      if (returnNew)
        throw new ServerError(
          'FailedToParse',
          "Cannot specify both new=true and remove=true; 'remove' always returns the deleted document",
        );
      if (arrayFilters) throw new ServerError('FailedToParse', 'Cannot specify arrayFilters and remove=true');
    } else if (!u) {
      throw new ServerError('FailedToParse', 'Either an update or remove=true must be specified');
    }
    const update = u && CompiledUpdate.compile(u, { arrayFilters, variables });
    const projection = parseProjection(args.object('fields'), query);
    const shown = (doc: Buffer | undefined) => (doc === undefined ? null : new RawDoc(projection ? projection.apply(doc) : doc));

    const collection = instance.catalog.collection(db, name); // a view fails here, as in mongod
    const match = matchDocuments(collection, {
      filter: query,
      sort: args.object('sort'),
      hint: body.hint as string | Record<string, unknown> | undefined,
      variables,
      collation: Collation.effective(body.collation, collection?.options.collation),
    })();

    if (remove) {
      if (!match) return { lastErrorObject: { n: 0 }, value: null };
      instance.deleteDocument(op, collection!, match.entry);
      return { lastErrorObject: { n: 1 }, value: shown(match.entry.raw) };
    }
    const clock = writeClock(instance);
    if (match) {
      const before = match.entry.raw;
      const after = updateEntry(
        { instance, op, collection: collection!, bypassDocumentValidation: bypass },
        match.entry,
        update!,
        query,
        clock,
      );
      return { lastErrorObject: { n: 1, updatedExisting: true }, value: shown(returnNew ? (after ?? before) : before) };
    }
    if (!upsert) return { lastErrorObject: { n: 0, updatedExisting: false }, value: null };
    const doc = insertUpserted({ instance, op, bypassDocumentValidation: bypass, db, collectionName: name }, update!, queryRaw, clock);
    return { lastErrorObject: { n: 1, updatedExisting: false, upserted: doc.id }, value: returnNew ? shown(doc.raw) : null };
  },
});
