/** Test-cluster resume tokens: they round-trip, and their hex strings sort as their events do. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Timestamp, UUID } from 'bson';
import { compareTokens, decodeToken, encodeToken, type ResumeTokenData } from '../cluster/changestream/token.js';

const tokenData: fc.Arbitrary<ResumeTokenData> = fc
  .record({
    t: fc.integer({ min: 0, max: 0xffffffff }),
    i: fc.integer({ min: 0, max: 0xffffffff }),
    event: fc.boolean(),
    txnOpIndex: fc.integer({ min: 0, max: 0xffffffff }),
    fromInvalidate: fc.boolean(),
    uuid: fc.option(fc.uint8Array({ minLength: 16, maxLength: 16 }), { nil: undefined }),
  })
  .map(({ t, i, event, txnOpIndex, fromInvalidate, uuid }) =>
    event
      ? { clusterTime: new Timestamp({ t, i }), event, txnOpIndex, fromInvalidate, uuid: uuid && new UUID(Buffer.from(uuid)) }
      : { clusterTime: new Timestamp({ t, i }), event, txnOpIndex: 0, fromInvalidate: false },
  );

test('a token decodes to what was encoded', () => {
  fc.assert(
    fc.property(tokenData, (data) => {
      const back = decodeToken(encodeToken(data));
      assert.equal(compareTokens(back, data), 0);
      assert.equal(back.uuid?.toHexString(), data.uuid?.toHexString());
    }),
  );
});

test('hex strings sort exactly as the events they mark', () => {
  fc.assert(
    fc.property(tokenData, tokenData, (a, b) => {
      const order = Math.sign(compareTokens(a, b));
      const [x, y] = [encodeToken(a)._data, encodeToken(b)._data];
      // Equal positions may differ by UUID only; otherwise the strings order like the tokens.
      if (order !== 0) assert.equal(Math.sign(x < y ? -1 : x > y ? 1 : 0), order);
    }),
  );
});

test('malformed tokens get mongod errors', () => {
  assert.throws(() => decodeToken({ _data: 'zz' }), { code: 9, codeName: 'FailedToParse' });
  assert.throws(() => decodeToken({ _data: '' }), { code: 40649 });
  assert.throws(() => decodeToken({ data: 'AA' }), { code: 40647 });
  assert.throws(() => decodeToken({ _data: '8200' }), { code: 260, codeName: 'InvalidResumeToken' });
});
