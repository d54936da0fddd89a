/**
 * Several instances, one per source shard: which events wait for the other instances
 * (src/cea/shard-key-change.ts `mayArriveFromAnotherShard`, src/cea/namespace-uuids.ts).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Binary, Long, serialize, UUID } from 'bson';
import { mayArriveFromAnotherShard } from '../../src/cea/shard-key-change.js';
import { NamespaceUuids } from '../../src/cea/namespace-uuids.js';

const uuid = () => new Binary(new UUID().toBinary().buffer, Binary.SUBTYPE_UUID);

describe('an insert that may be the arriving half of a cross-shard move', () => {
  const documentKey = (key: object) => new Uint8Array(serialize(key));
  const event = (extra: object) => new Uint8Array(serialize({ operationType: 'insert', ...extra }));

  it('is an insert in a transaction into a collection sharded on the source', () => {
    const key = documentKey({ k: 150, _id: 1 });
    assert.equal(mayArriveFromAnotherShard(event({ lsid: { id: uuid() }, txnNumber: Long.fromNumber(1) }), key), true);
  });

  it('is never one outside a transaction, or when the document key is `_id` alone', () => {
    assert.equal(mayArriveFromAnotherShard(event({}), documentKey({ k: 150, _id: 1 })), false);
    assert.equal(mayArriveFromAnotherShard(event({ txnNumber: Long.fromNumber(1) }), documentKey({ _id: 1 })), false);
  });
});

describe('a write held for the DDL another instance applies', () => {
  const [renamed, recreated, other] = [uuid(), uuid(), uuid()];

  it('waits while the records know its name with another UUID, or its UUID under another name', async () => {
    const records = [
      { db: 'db', coll: 'before', uuid: renamed },
      { db: 'db', coll: 'dropped', uuid: other },
    ];
    const uuids = new NamespaceUuids(() => Promise.resolve(records));
    await uuids.refresh();
    assert.equal(uuids.pending('db.after', renamed), true, 'a rename not applied yet');
    assert.equal(uuids.pending('db.dropped', recreated), true, 'a collection created again under a known name');
    assert.equal(uuids.pending('db.before', renamed), false, 'as recorded');
    assert.equal(uuids.pending('db.unknown', uuid()), false, 'nothing says a DDL is pending');
    assert.equal(uuids.pending('db.after', undefined), false, 'a stream without collection UUIDs');
  });

  it('goes on once any instance records the name with its UUID, even while another still has the old record', async () => {
    const records = [
      { db: 'db', coll: 'before', uuid: renamed },
      { db: 'db', coll: 'after', uuid: renamed },
    ];
    const uuids = new NamespaceUuids(() => Promise.resolve(records));
    await uuids.refresh();
    assert.equal(uuids.pending('db.after', renamed), false);
  });
});
