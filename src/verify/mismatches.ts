/**
 * The differences the verifier has confirmed (`verificationMismatches`), one document per
 * difference: a document by namespace and `_id`, or a namespace-level one (an index by name, the
 * options, the namespace itself). A difference that goes away (a later change on the source
 * rewrote the document, commit restored an index) is removed: the collection holds what is known
 * to differ now. Memory: none; progress shows counts and the first few, kept by the verifier.
 */
import { EJSON } from 'bson';
import type { MismatchKind, Mismatch } from '../domain/verification.js';
import { InstanceCollection, unpackValue, type MetadataStore } from '../meta/store.js';

/** What a difference is about: a document (`id`, packed) or a namespace-level subject (`index:<name>`, `options`, `namespace`). */
export type MismatchSubject = { id: string } | { subject: string };

export interface MismatchDocument {
  _id: { instance: string; ns: string; about: string };
  instance: string;
  ns: string;
  /** The document's `_id`, packed (document-level differences only). */
  id?: string;
  kind: MismatchKind;
  detail: string;
  foundAt: Date;
}

function about(subject: MismatchSubject): string {
  return 'id' in subject ? `id:${subject.id}` : subject.subject;
}

/** A stored difference as the report shows it: `_id` decoded to relaxed Extended JSON. */
export function describeMismatch(doc: MismatchDocument): Mismatch {
  const mismatch: Mismatch = { namespace: doc.ns, kind: doc.kind, detail: doc.detail, foundAt: doc.foundAt };
  if (doc.id !== undefined) mismatch._id = EJSON.serialize({ v: unpackValue(doc.id) }, { relaxed: true }).v;
  return mismatch;
}

/** A document-level difference as the report shows it (the document's `_id` packed). */
export function documentMismatch(ns: string, id: string, kind: MismatchKind, detail: string): Mismatch {
  return describeMismatch({ _id: { instance: '', ns, about: '' }, instance: '', ns, id, kind, detail, foundAt: new Date() });
}

/** One line for logs and warnings: `db.coll _id 5: different (field "total" differs)`. */
export function mismatchLine(mismatch: Mismatch): string {
  const id = mismatch._id === undefined ? '' : ` _id ${JSON.stringify(mismatch._id)}`;
  return `${mismatch.namespace}${id}: ${mismatch.kind} (${mismatch.detail})`;
}

export class MismatchStore extends InstanceCollection<MismatchDocument> {
  constructor(store: MetadataStore) {
    super(store, 'verificationMismatches');
  }

  /** Records (or replaces) a difference; true when it was not known before. */
  async record(ns: string, subject: MismatchSubject, kind: MismatchKind, detail: string): Promise<boolean> {
    const key = { instance: this.instance, ns, about: about(subject) };
    const doc: MismatchDocument = { _id: key, instance: this.instance, ns, kind, detail, foundAt: new Date() };
    if ('id' in subject) doc.id = subject.id;
    const result = await this.counted(this.collection.replaceOne({ _id: key }, doc, { upsert: true }));
    return result.upsertedCount > 0;
  }

  /** Forgets a difference that is gone; true when there was one. */
  async resolve(ns: string, subject: MismatchSubject): Promise<boolean> {
    const result = await this.counted(this.collection.deleteOne({ _id: { instance: this.instance, ns, about: about(subject) } }));
    return result.deletedCount > 0;
  }

  /** Forgets the differences of these documents that are known; returns those it forgot (two reads, whatever the batch). */
  async resolveDocuments(entries: readonly { ns: string; id: string }[]): Promise<{ ns: string; id: string }[]> {
    if (entries.length === 0) return [];
    const keys = entries.map(({ ns, id }) => ({ instance: this.instance, ns, about: about({ id }) }));
    const known = await this.collection.find({ _id: { $in: keys } }, { projection: { ns: 1, id: 1 } }).toArray();
    if (known.length === 0) return [];
    await this.counted(this.collection.deleteMany({ _id: { $in: known.map((doc) => doc._id) } }));
    return known.map((doc) => ({ ns: doc.ns, id: doc.id! }));
  }

  /** The namespaces with namespace-level differences recorded (`db.coll`). */
  async namespaceLevelNames(): Promise<Set<string>> {
    const docs = await this.collection.find({ instance: this.instance, id: { $exists: false } }, { projection: { ns: 1 } }).toArray();
    return new Set(docs.map((doc) => doc.ns));
  }

  /** Forgets the namespace-level differences of `ns` whose subject is not in `keep`. */
  async resolveNamespaceLevel(ns: string, keep: readonly string[]): Promise<number> {
    const result = await this.counted(
      this.collection.deleteMany({
        instance: this.instance,
        ns,
        id: { $exists: false },
        '_id.about': { $nin: [...keep] },
      }),
    );
    return result.deletedCount;
  }

  /** Namespaces and packed `_id`s of document-level differences, after `skip`, at most `limit`. */
  async documents(skip: number, limit: number): Promise<{ ns: string; id: string }[]> {
    const docs = await this.collection
      .find({ instance: this.instance, id: { $exists: true } }, { projection: { ns: 1, id: 1 } })
      .sort({ _id: 1 })
      .skip(skip)
      .limit(limit)
      .toArray();
    return docs.map((doc) => ({ ns: doc.ns, id: doc.id! }));
  }

  /** Read again only after a write (progress asks every second; an idle verifier's answer stays the same). */
  async count(): Promise<number> {
    return this.keptUntilWrite('count', () => this.collection.countDocuments({ instance: this.instance }));
  }

  /** Differences by namespace then subject, after `skip`, at most `limit` (the last page read is kept until a write). */
  async list(skip: number, limit: number): Promise<Mismatch[]> {
    return this.keptUntilWrite(
      'page',
      async () => {
        const docs = await this.collection
          .find({ instance: this.instance })
          .sort({ '_id.ns': 1, '_id.about': 1 })
          .skip(skip)
          .limit(limit)
          .toArray();
        return docs.map((doc) => describeMismatch(doc as MismatchDocument));
      },
      `${skip}:${limit}`,
    );
  }
}
