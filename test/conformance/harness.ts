/**
 * Runs a conformance suite against every target: the test cluster (always, in this process)
 * and a real deployment when `MONGODB_URI` is set (skipped otherwise). Each suite gets its own
 * database name so that a real deployment's data is never touched.
 */
import { after, before, describe } from 'node:test';
import { MongoClient, type Db } from 'mongodb';
import { startCluster, type ClusterOptions } from '../cluster/index.js';

export interface Target {
  /** Which deployment this is: 'test cluster' or 'MONGODB_URI'. */
  name: string;
  uri: string;
  client: MongoClient;
  /** A database reserved for this suite (dropped after it). */
  db: Db;
  /** True for the project's own test cluster, whose extra knobs (e.g. oplog size) tests may use. */
  local: boolean;
}

let counter = 0;

/**
 * Declares `suite` once per target; `body` receives a getter for the started target. `local`
 * are the options of the test cluster the suite runs on (a real deployment is used as it is).
 */
export function conformance(suite: string, body: (target: () => Target) => void, local: ClusterOptions = {}): void {
  const targets: { name: string; uri?: string }[] = [{ name: 'test cluster' }, { name: 'MONGODB_URI', uri: process.env.MONGODB_URI }];
  for (const spec of targets) {
    const skip = spec.name === 'MONGODB_URI' && !spec.uri ? 'MONGODB_URI is not set' : false;
    describe(`${suite} [${spec.name}]`, { skip }, () => {
      let target: Target | undefined;
      let stop: (() => Promise<void>) | undefined;
      before(async () => {
        let uri = spec.uri;
        if (!uri) {
          const cluster = await startCluster(local);
          uri = cluster.uri;
          stop = cluster.stop;
        }
        const client = await MongoClient.connect(uri, { serverSelectionTimeoutMS: 5000 });
        const dbName = `ferry_conformance_${process.pid}_${++counter}`;
        target = { name: spec.name, uri, client, db: client.db(dbName), local: !spec.uri };
      });
      after(async () => {
        if (target) {
          await target.db.dropDatabase().catch(() => {});
          await target.client.close();
        }
        await stop?.();
      });
      body(() => {
        if (!target) throw new Error('target not started');
        return target;
      });
    });
  }
}
