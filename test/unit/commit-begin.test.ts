// Beginning a commit with source write blocking: if the commit point cannot be taken or recorded,
// the commit has not begun and the source must take the application's writes again.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Document } from 'bson';
import type { MongoClient } from 'mongodb';
import { pino } from 'pino';
import { CommitProcess } from '../../src/commit/commit.js';
import type { Logger } from '../../src/log/logger.js';
import { MetadataStore } from '../../src/meta/store.js';
import type { StartRequest } from '../../src/domain/start-request.js';

const logger = pino({ level: 'silent' }) as unknown as Logger;

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
    const commit = new CommitProcess({
      source,
      sourceEndpoint: { name: 'cluster0', uri: 'mongodb://src', address: 'src' },
      destination,
      store: new MetadataStore(destination, 'test'),
      request,
      logger,
      retryIntervalMs: 10,
    });
    await assert.rejects(commit.begin(), /not primary/);
    const blocking = commands.filter((c) => 'setUserWriteBlockMode' in c).map((c) => c.global);
    assert.deepEqual(blocking, [true, false], 'blocked for the commit, then unblocked when it did not begin');
  });
});
