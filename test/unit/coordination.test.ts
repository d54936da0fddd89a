/**
 * The pure parts of several instances' coordination (src/coordination/): who coordinates, how a
 * shard is reached directly from the router's connection string, and how two start requests are
 * compared (identical commands); reversed, which shard of the new source each instance takes.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { shardUri } from '../../src/cluster/sharding.js';
import { chooseCoordinator } from '../../src/coordination/coordinator.js';
import { shardAtPosition } from '../../src/coordination/membership.js';
import { commandFingerprint, differingFields } from '../../src/coordination/fingerprint.js';
import { START_REQUEST } from '../api/app.js';
import { ConnectionString } from 'mongodb-connection-string-url';

describe('coordination', () => {
  it('reversed, gives the i-th instance by sorted id the i-th new-source shard by sorted ID, whatever the listShards order', () => {
    const shards = [
      { id: 'dest-b', host: 'b/h:2' },
      { id: 'dest-a', host: 'a/h:1' },
    ];
    assert.equal(shardAtPosition(['src-2', 'src-1'], 'src-1', shards)?.id, 'dest-a');
    assert.equal(shardAtPosition(['src-1', 'src-2'], 'src-2', shards)?.id, 'dest-b');
    // Every instance a shard of its own, none left over.
    assert.deepEqual(new Set(['src-1', 'src-2'].map((id) => shardAtPosition(['src-1', 'src-2'], id, shards)?.id)).size, 2);
    assert.equal(shardAtPosition(['src-1', 'src-2', 'src-3'], 'src-3', shards), undefined);
  });

  it('chooses the first shard by id, whatever order the instances are listed in', () => {
    assert.equal(chooseCoordinator(['shard02', 'shard01', 'shard03']), 'shard01');
    assert.equal(chooseCoordinator(['b', 'a']), chooseCoordinator(['a', 'b']));
  });

  it("reaches a shard with the router's credentials and options, the shard's hosts and its replica set", () => {
    const uri = shardUri('mongodb://ferry:s%40cret@mongos.example:27017/?authSource=admin&retryWrites=true', {
      id: 'shard02',
      host: 'shard02/h1.example:27018,h2.example:27019',
    });
    const parsed = new ConnectionString(uri);
    assert.equal(parsed.username, 'ferry');
    assert.equal(decodeURIComponent(parsed.password), 's@cret');
    assert.deepEqual(parsed.hosts, ['h1.example:27018', 'h2.example:27019']);
    assert.equal(parsed.searchParams.get('replicaSet'), 'shard02');
    assert.equal(parsed.searchParams.get('authSource'), 'admin');
    assert.equal(parsed.searchParams.get('retryWrites'), 'true');
  });

  it('turns an SRV router string into a plain one with TLS, as Atlas shards need', () => {
    const uri = shardUri('mongodb+srv://u:p@cluster0.example.net/', { id: 'atlas-shard-0', host: 'atlas-shard-0/a:27017,b:27017' });
    assert.match(uri, /^mongodb:\/\/u:p@a:27017,b:27017\//);
    assert.match(uri, /tls=true/);
    assert.match(uri, /replicaSet=atlas-shard-0/);
  });

  it('compares start requests whatever their key order, and names the fields that differ', () => {
    const reordered = Object.fromEntries(Object.entries(START_REQUEST).reverse()) as typeof START_REQUEST;
    assert.deepEqual(differingFields(commandFingerprint(START_REQUEST), commandFingerprint(reordered)), []);
    const filtered = { ...START_REQUEST, includeNamespaces: [{ database: 'a' }] };
    const blocking = { ...filtered, enableUserWriteBlocking: 'none' as const };
    assert.deepEqual(differingFields(commandFingerprint(START_REQUEST), commandFingerprint(blocking)), [
      'enableUserWriteBlocking',
      'includeNamespaces',
    ]);
  });
});
