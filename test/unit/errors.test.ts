// The error catalogue: one class per code, the status and the server's code kept apart; and
// asClusterError, which names a cluster unreachable only when it could not be reached.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MongoServerError, MongoServerSelectionError } from 'mongodb';
import { asClusterError } from '../../src/cluster/errors.js';
import { ERROR_CATALOGUE, ERROR_CODES } from '../../src/errors/catalogue.js';
import * as errors from '../../src/errors/errors.js';

const ENDPOINT = { name: 'cluster0', uri: 'mongodb://ferry:s3cret@src:27017', address: 'src:27017' } as const;

describe('the error catalogue', () => {
  it('has a class for every code, named after it, carrying its status and its filled-in template', () => {
    for (const code of ERROR_CODES) {
      const Class = (errors as unknown as Record<string, new (params: unknown) => errors.FerryError>)[code];
      assert.equal(typeof Class, 'function', `no class ${code}`);
      const params = new Proxy({}, { get: (_, name) => `<${String(name)}>` });
      const error = new Class(ERROR_CATALOGUE[code].message === '{detail}' ? 'what happened' : params);
      assert.ok(error instanceof errors.FerryError);
      assert.equal(error.code, code);
      assert.equal(error.name, code);
      assert.equal(error.status, (ERROR_CATALOGUE[code] as { status?: number }).status ?? 500);
      assert.doesNotMatch(error.message, /\{\w+\}/, `${code}: every placeholder is filled`);
      assert.deepEqual(error.toResponse(), { success: false, error: code, errorDescription: error.message });
    }
  });

  it('keeps a server error code apart from its own code, and never lets a password through', () => {
    const cause = new MongoServerError({ ok: 0, code: 13, codeName: 'Unauthorized', errmsg: 'not authorized on mongodb://u:pw@h' });
    const error = new errors.ClusterCommandFailed({ cluster: 'cluster0 (h)', operation: 'hello', reason: cause.message }, { cause });
    assert.equal(error.code, 'ClusterCommandFailed');
    assert.equal(error.serverCode, 13);
    assert.equal(error.serverCodeName, 'Unauthorized');
    assert.doesNotMatch(error.message, /pw/);
  });
});

describe('asClusterError', () => {
  it('keeps a FerryError as it is: a reachable source without a start time is not "unreachable"', () => {
    const missing = new errors.OperationTimeMissing({ cluster: 'cluster0 (src:27017)', purpose: 'the start time' });
    assert.equal(asClusterError(ENDPOINT, 'appendOplogNote', missing), missing);
  });

  it('calls an error that is neither the server nor the network a bug, not ClusterUnreachable', () => {
    const error = asClusterError(ENDPOINT, 'appendOplogNote', new TypeError("Cannot read properties of undefined (reading 'getHighBits')"));
    assert.equal(error.code, 'InternalError');
    assert.match(error.message, /getHighBits/);
  });

  it('names a refusal ClusterCommandFailed (with the server code) and a cluster not found ClusterUnreachable', () => {
    const refused = asClusterError(ENDPOINT, 'hello', new MongoServerError({ ok: 0, code: 13, codeName: 'Unauthorized', errmsg: 'no' }));
    assert.equal(refused.code, 'ClusterCommandFailed');
    assert.equal(refused.serverCode, 13);
    assert.match(refused.message, /^cluster0 \(src:27017\) refused hello: Unauthorized: no$/);
    const gone = asClusterError(ENDPOINT, 'hello', new MongoServerSelectionError('Server selection timed out after 10000 ms', {} as never));
    assert.equal(gone.code, 'ClusterUnreachable');
    assert.equal(gone.status, 502);
  });
});
