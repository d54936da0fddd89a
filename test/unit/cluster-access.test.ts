// The cluster layer (src/cluster/): replies are checked, not assumed. An `appendOplogNote` whose
// reply carries no operationTime is OperationTimeMissing wherever it is used (start time, commit
// point, copy complete), never an undefined time recorded as if it were one.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Timestamp, type Document } from 'bson';
import type { MongoClient } from 'mongodb';
import { MongoNetworkError, MongoServerError } from 'mongodb';
import { appendOplogNote, missingWriteBlockingPrivileges } from '../../src/cluster/commands.js';
import { isDuplicateKey, isNamespaceNotFound, isTransient, serverCodeOf } from '../../src/cluster/errors.js';
import { retryDelay, RETRY_POLICY, retryTransient } from '../../src/cluster/retry.js';
import { Commit } from '../../src/commit/commit.js';
import { commitContext } from '../helpers/phase-context.js';
import type { StartRequest } from '../../src/domain/start-request.js';
import { CopyWriteRefused } from '../../src/errors/errors.js';

const ENDPOINT = { name: 'cluster0', uri: 'mongodb://src:27017', address: 'src:27017' } as const;

/** A client whose admin commands answer with `answer(command)`, recording each. */
function fakeClient(answer: (command: Document) => Document, commands: Document[] = []): MongoClient {
  const db = {
    command: async (command: Document) => {
      commands.push(command);
      return answer(command);
    },
    collection: () => ({}),
  };
  return { db: () => db } as unknown as MongoClient;
}

describe('appendOplogNote', () => {
  it('returns the reply’s operationTime', async () => {
    const time = new Timestamp({ t: 1_700_000_000, i: 3 });
    const client = fakeClient(() => ({ ok: 1, operationTime: time }));
    assert.equal(await appendOplogNote({ endpoint: ENDPOINT, client }, 'sync start', 'x'), time);
  });

  it('refuses a reply without one, naming the cluster and what the time was for', async () => {
    const client = fakeClient(() => ({ ok: 1 }));
    await assert.rejects(appendOplogNote({ endpoint: ENDPOINT, client }, 'commit', 'x'), (error: Error & { code?: string }) => {
      assert.equal(error.code, 'OperationTimeMissing');
      assert.match(error.message, /^cluster0 \(src:27017\) answered appendOplogNote \(commit\) without an operationTime/);
      return true;
    });
  });

  it('makes a commit without a commit point fail with OperationTimeMissing, and unblock the source again', async () => {
    const commands: Document[] = [];
    const source = fakeClient(() => ({ ok: 1 }), commands);
    const destination = fakeClient(() => ({ ok: 1 }));
    const request = { source: 'cluster0', destination: 'cluster1', enableUserWriteBlocking: 'sourceAndDestination' } as StartRequest;
    const commit = new Commit(commitContext(source, destination, request));
    await assert.rejects(commit.begin(), { code: 'OperationTimeMissing' });
    assert.deepEqual(
      commands.filter((c) => 'setUserWriteBlockMode' in c).map((c) => c.global),
      [true, false],
    );
  });
});

describe('write-blocking privileges', () => {
  it('are all missing for a user without cluster actions, and none without access control', async () => {
    const authenticated = fakeClient(() => ({ ok: 1, authInfo: { authenticatedUsers: [{ user: 'u' }], authenticatedUserPrivileges: [] } }));
    assert.deepEqual(await missingWriteBlockingPrivileges(authenticated), ['bypassWriteBlockingMode', 'setUserWriteBlockMode']);
    const open = fakeClient(() => ({ ok: 1, authInfo: { authenticatedUsers: [] } }));
    assert.deepEqual(await missingWriteBlockingPrivileges(open), []);
  });
});

describe('server-error predicates', () => {
  it('read the server code from driver errors, type-faithful Int32 codes and FerryErrors alike', () => {
    assert.equal(isDuplicateKey(new MongoServerError({ ok: 0, code: 11000, errmsg: 'E11000' })), true);
    assert.equal(isNamespaceNotFound({ code: { valueOf: () => 26 } }), true);
    assert.equal(serverCodeOf(new CopyWriteRefused('x', { serverCode: 91 })), 91);
    assert.equal(
      isTransient(new CopyWriteRefused('write concern', { serverCode: 91 })),
      true,
      'a shutdown behind a write error is retried',
    );
    assert.equal(isTransient(new MongoNetworkError('reset')), true);
    assert.equal(isTransient(new MongoServerError({ ok: 0, code: 13, errmsg: 'Unauthorized' })), false);
  });
});

describe('the retry policy', () => {
  it('retries a transient failure with growing waits, and gives up on a refusal at once', async () => {
    assert.ok(retryDelay(1) > retryDelay(0) && retryDelay(50) === RETRY_POLICY.maxDelayMs);
    let calls = 0;
    assert.equal(
      await retryTransient(async () => {
        if (++calls < 3) throw new MongoNetworkError('reset');
        return 'done';
      }),
      'done',
    );
    assert.equal(calls, 3);
    calls = 0;
    await assert.rejects(
      retryTransient(async () => {
        calls++;
        throw new MongoServerError({ ok: 0, code: 13, errmsg: 'Unauthorized' });
      }),
      /Unauthorized/,
    );
    assert.equal(calls, 1);
  });
});
