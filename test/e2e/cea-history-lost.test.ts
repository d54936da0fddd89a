/**
 * The source's oplog rolls past Ferry's resume point while the sync is paused: on resume the
 * change stream cannot continue (ChangeStreamHistoryLost). Nothing is skipped: the sync pauses
 * again, and progress (`info`, `warnings`) and the log say what happened and what the operator
 * must do.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Document } from 'bson';
import { MongoClient } from 'mongodb';
import { startClusterPair, type ClusterPair } from '../helpers/clusters.js';
import { RUN } from './copy-fixtures.js';
import { startFerry } from './ferry-process.js';

const local = !(process.env.FERRY_TEST_CLUSTER0_URI && process.env.FERRY_TEST_CLUSTER1_URI);

describe('change stream history lost', { skip: local ? false : 'needs a source with a tiny oplog' }, () => {
  let pair: ClusterPair;
  let source: MongoClient;

  before(async () => {
    pair = await startClusterPair({ oplogSizeMB: 1 });
    source = await MongoClient.connect(pair.cluster0);
  });

  after(async () => {
    await source?.close();
    await pair?.stop();
  });

  it('pauses the sync and says what to do, instead of skipping changes', async () => {
    const db = `lost_${RUN}`;
    await source
      .db(db)
      .collection('items')
      .insertMany(Array.from({ length: 10 }, (_, i) => ({ _id: i })) as Document[]);
    const ferry = await startFerry(['--cluster0', pair.cluster0, '--cluster1', pair.cluster1, '--id', `lost-${RUN}`]);
    try {
      assert.equal(
        (await ferry.post('start', { source: 'cluster0', destination: 'cluster1', includeNamespaces: [{ database: db }] })).status,
        200,
      );
      await ferry.waitForProgress((p) => p.canCommit === true, 60_000);
      assert.equal((await ferry.post('pause', {})).status, 200);
      // About 3 MiB of writes roll the 1 MiB oplog past the recorded resume point.
      for (let i = 0; i < 30; i++) {
        await source
          .db(db)
          .collection('items')
          .insertMany(Array.from({ length: 10 }, (_, k) => ({ _id: 1000 + i * 10 + k, pad: 'x'.repeat(10_000) })) as Document[]);
      }
      assert.equal((await ferry.post('resume', {})).status, 200);
      const stopped = await ferry.waitForProgress((p) => p.state === 'PAUSED', 60_000);
      assert.match(stopped.info, /history was lost/);
      const warning = stopped.warnings.find((w: string) => w.includes('ChangeStreamHistoryLost') || w.includes('history was lost'));
      assert.ok(warning !== undefined, JSON.stringify(stopped.warnings));
      assert.match(warning, /oplog/);
      assert.match(warning, /from the beginning/);
      assert.equal(stopped.canCommit, false);
      assert.ok(
        ferry.log().some((line) => line.level === 'error' && String(line.message).includes('history was lost')),
        'the log says it too',
      );
    } finally {
      assert.equal(await ferry.stop(), 0);
    }
  });
});
