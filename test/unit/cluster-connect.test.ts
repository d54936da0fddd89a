/** How Ferry's clients take their timeouts: Ferry's 10 s unless the connection string sets its own. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CLUSTER_TIMEOUT_MS, connect } from '../../src/cluster/connect.js';

describe('connect', () => {
  it("uses Ferry's cluster timeout when the connection string sets none", () => {
    const { options } = connect('mongodb://db0.example.net:27018/?replicaSet=rs0');
    assert.equal(options.serverSelectionTimeoutMS, CLUSTER_TIMEOUT_MS);
    assert.equal(options.connectTimeoutMS, CLUSTER_TIMEOUT_MS);
  });

  it("keeps the connection string's own timeouts, whatever their case", () => {
    const { options } = connect('mongodb://db0.example.net:27018/?serverselectiontimeoutms=750&connectTimeoutMS=1200');
    assert.equal(options.serverSelectionTimeoutMS, 750);
    assert.equal(options.connectTimeoutMS, 1200);
  });

  it('an unreachable cluster is reported after the connection string’s server selection timeout', async () => {
    // Port 1 on loopback refuses at once: only server selection's wait remains.
    const client = connect('mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=300&directConnection=true');
    const began = Date.now();
    await assert.rejects(client.db('admin').command({ ping: 1 }), { name: 'MongoServerSelectionError' });
    // Far below Ferry's own 10 s: the string's timeout was used.
    assert.ok(Date.now() - began < CLUSTER_TIMEOUT_MS / 2, `took ${Date.now() - began} ms`);
    await client.close();
  });
});
