// Beginning a commit with source write blocking: if the commit point cannot be taken or recorded,
// the commit has not begun and the source must take the application's writes again.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Document } from 'bson';
import type { MongoClient } from 'mongodb';
import { Commit } from '../../src/commit/commit.js';
import { commitContext } from '../helpers/phase-context.js';
import type { StartRequest } from '../../src/domain/start-request.js';

/** A source recording its admin commands; `appendOplogNote` fails. */
function failingSource(commands: Document[]): MongoClient {
  const admin = {
    command: async (command: Document) => {
      commands.push(command);
      if ('appendOplogNote' in command) throw new Error('not primary any more');
      return { ok: 1 };
    },
  };
  return { db: () => admin } as unknown as MongoClient;
}

describe('beginning a commit', () => {
  it('unblocks the source again when the commit point cannot be taken', async () => {
    const commands: Document[] = [];
    const source = failingSource(commands);
    const destination = { db: () => ({ collection: () => ({}) }) } as unknown as MongoClient;
    const request = {
      source: 'cluster0',
      destination: 'cluster1',
      enableUserWriteBlocking: 'sourceAndDestination',
    } as unknown as StartRequest;
    const commit = new Commit(commitContext(source, destination, request));
    await assert.rejects(commit.begin(), /not primary/);
    const blocking = commands.filter((c) => 'setUserWriteBlockMode' in c).map((c) => c.global);
    assert.deepEqual(blocking, [true, false], 'blocked for the commit, then unblocked when it did not begin');
  });
});
