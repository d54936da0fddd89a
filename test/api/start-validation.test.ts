/**
 * Every validation rule of `POST /api/v1/start`, through the real HTTP API: a bad body is refused
 * with 400 InvalidRequest naming the problem, before preflight, leaving the state IDLE; good
 * bodies reach the engine normalized.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { buildTestApp, VALID_START, type TestApp } from './app.js';
import { assertProgressRules } from './progress-rules.js';

let t: TestApp;
before(async () => {
  t = await buildTestApp();
});
after(() => t.close());

const SHARDING = {
  shardingEntries: [{ database: 'shop', collection: 'orders', shardCollection: { key: [{ customerId: 1 }, { _id: 'hashed' }] } }],
};

/** [what is wrong, body, pattern the errorDescription must match] */
const INVALID: [string, unknown, RegExp][] = [
  ['source missing', { destination: 'cluster1' }, /missing required field "source"/],
  ['destination missing', { source: 'cluster0' }, /missing required field "destination"/],
  ['source not a configured cluster', { source: 'cluster2', destination: 'cluster1' }, /source: "cluster2" is not a configured cluster/],
  ['destination not a configured cluster', { source: 'cluster0', destination: 'prod' }, /destination: "prod" is not a configured cluster/],
  ['source equals destination', { source: 'cluster0', destination: 'cluster0' }, /must be different clusters/],
  ['source of the wrong type', { source: 0, destination: 'cluster1' }, /source: must be of type string/],
  ['unknown field', { ...VALID_START, verbose: true }, /request body: unknown field "verbose"/],
  ['buildIndexes unknown value', { ...VALID_START, buildIndexes: 'sometimes' }, /buildIndexes: must be one of "afterDataCopy", .*"never"/],
  ['buildIndexes wrong type', { ...VALID_START, buildIndexes: true }, /buildIndexes: must be one of/],
  ['reversible not boolean', { ...VALID_START, reversible: 'yes' }, /reversible: must be of type boolean/],
  ['reversible as string "true"', { ...VALID_START, reversible: 'true' }, /reversible: must be of type boolean/],
  [
    'enableUserWriteBlocking unknown string',
    { ...VALID_START, enableUserWriteBlocking: 'both' },
    /enableUserWriteBlocking: must be one of true, false, "sourceAndDestination", "destinationOnly", "none"/,
  ],
  ['enableUserWriteBlocking number', { ...VALID_START, enableUserWriteBlocking: 1 }, /enableUserWriteBlocking: must be one of/],
  ['includeNamespaces not an array', { ...VALID_START, includeNamespaces: { database: 'a' } }, /includeNamespaces: must be of type array/],
  ['includeNamespaces empty', { ...VALID_START, includeNamespaces: [] }, /includeNamespaces: must NOT have fewer than 1 items/],
  ['filter entry not an object', { ...VALID_START, includeNamespaces: ['shop'] }, /includeNamespaces\[0\]: must be a JSON object/],
  [
    'filter entry without a database',
    { ...VALID_START, includeNamespaces: [{ collections: ['a'] }] },
    /includeNamespaces\[0\] needs "database" or "databaseRegex"/,
  ],
  [
    'filter entry with both database and databaseRegex',
    { ...VALID_START, excludeNamespaces: [{ database: 'a', databaseRegex: { pattern: '^b' } }] },
    /excludeNamespaces\[0\] takes "database" or "databaseRegex", not both/,
  ],
  ['empty database name', { ...VALID_START, includeNamespaces: [{ database: '' }] }, /includeNamespaces\[0\]\.database: must not be empty/],
  [
    'invalid database name',
    { ...VALID_START, excludeNamespaces: [{ database: 'a.b' }] },
    /excludeNamespaces\[0\]\.database: "a\.b" is not a valid database name/,
  ],
  [
    'empty collection name',
    { ...VALID_START, includeNamespaces: [{ database: 'a', collections: ['x', ''] }] },
    /includeNamespaces\[0\]\.collections\[1\]: must not be empty/,
  ],
  [
    'collection name with $',
    { ...VALID_START, includeNamespaces: [{ database: 'a', collections: ['x$y'] }] },
    /collections\[0\]: "x\$y" is not a valid collection name/,
  ],
  [
    'empty collections list',
    { ...VALID_START, includeNamespaces: [{ database: 'a', collections: [] }] },
    /collections: must NOT have fewer than 1 items/,
  ],
  [
    'unknown field in a filter',
    { ...VALID_START, includeNamespaces: [{ database: 'a', collection: 'x' }] },
    /includeNamespaces\[0\]: unknown field "collection"/,
  ],
  [
    'regex that does not compile',
    { ...VALID_START, includeNamespaces: [{ database: 'a', collectionsRegex: { pattern: '(' } }] },
    /collectionsRegex\.pattern "\(" is not a valid regular expression/,
  ],
  [
    'regex with an unknown option',
    { ...VALID_START, excludeNamespaces: [{ databaseRegex: { pattern: '^a', options: 'g' } }] },
    /databaseRegex\.options has "g"/,
  ],
  [
    'regex without pattern',
    { ...VALID_START, includeNamespaces: [{ databaseRegex: { options: 'i' } }] },
    /databaseRegex: missing required field "pattern"/,
  ],
  [
    'regex options not a string',
    { ...VALID_START, includeNamespaces: [{ databaseRegex: { pattern: 'a', options: 1 } }] },
    /databaseRegex\.options: must be of type string/,
  ],
  [
    'reversible with includeNamespaces',
    { ...VALID_START, reversible: true, enableUserWriteBlocking: true, includeNamespaces: [{ database: 'a' }] },
    /reversible sync cannot be filtered/,
  ],
  [
    'reversible with excludeNamespaces',
    { ...VALID_START, reversible: true, enableUserWriteBlocking: true, excludeNamespaces: [{ database: 'a' }] },
    /reversible sync cannot be filtered/,
  ],
  [
    'reversible with buildIndexes never',
    { ...VALID_START, reversible: true, enableUserWriteBlocking: true, buildIndexes: 'never' },
    /buildIndexes "never" is not allowed/,
  ],
  ['reversible without write blocking', { ...VALID_START, reversible: true }, /reversing needs write blocking on both clusters/],
  [
    'reversible with destination-only write blocking',
    { ...VALID_START, reversible: true, enableUserWriteBlocking: 'destinationOnly' },
    /reversing needs write blocking/,
  ],
  ['sharding without shardingEntries', { ...VALID_START, sharding: {} }, /sharding: missing required field "shardingEntries"/],
  [
    'sharding entry without key',
    { ...VALID_START, sharding: { shardingEntries: [{ database: 'a', collection: 'b', shardCollection: {} }] } },
    /shardCollection: missing required field "key"/,
  ],
  [
    'shard key empty',
    { ...VALID_START, sharding: { shardingEntries: [{ database: 'a', collection: 'b', shardCollection: { key: [] } }] } },
    /key: must NOT have fewer than 1 items/,
  ],
  [
    'shard key direction -1',
    { ...VALID_START, sharding: { shardingEntries: [{ database: 'a', collection: 'b', shardCollection: { key: [{ x: -1 }] } }] } },
    /key\[0\]\.x: must be one of 1, "hashed"/,
  ],
  [
    'shard key part with two fields',
    { ...VALID_START, sharding: { shardingEntries: [{ database: 'a', collection: 'b', shardCollection: { key: [{ x: 1, y: 1 }] } }] } },
    /key\[0\]: must NOT have more than 1 properties/,
  ],
  [
    'shard key field repeated',
    {
      ...VALID_START,
      sharding: { shardingEntries: [{ database: 'a', collection: 'b', shardCollection: { key: [{ x: 1 }, { x: 'hashed' }] } }] },
    },
    /field "x" repeats/,
  ],
  [
    'two hashed shard key fields',
    {
      ...VALID_START,
      sharding: { shardingEntries: [{ database: 'a', collection: 'b', shardCollection: { key: [{ x: 'hashed' }, { y: 'hashed' }] } }] },
    },
    /at most one field can be hashed/,
  ],
  [
    'sharding entry listed twice',
    { ...VALID_START, sharding: { shardingEntries: [SHARDING.shardingEntries[0], SHARDING.shardingEntries[0]] } },
    /shop\.orders is listed twice/,
  ],
  [
    'createSupportingIndexes not boolean',
    { ...VALID_START, sharding: { ...SHARDING, createSupportingIndexes: 'no' } },
    /createSupportingIndexes: must be of type boolean/,
  ],
  ['verification with unknown field', { ...VALID_START, verification: { enabled: true, level: 2 } }, /verification: unknown field "level"/],
  ['documentFilter (not supported)', { ...VALID_START, documentFilter: { a: 1 } }, /unknown field "documentFilter"/],
  // mongosync's start fields.
  ['detectRandomId not boolean', { ...VALID_START, detectRandomId: 'yes' }, /detectRandomId: must be of type boolean/],
  ['skipDiskSpaceCheck not boolean', { ...VALID_START, skipDiskSpaceCheck: 1 }, /skipDiskSpaceCheck: must be of type boolean/],
  [
    'preExistingDestinationData not boolean',
    { ...VALID_START, preExistingDestinationData: 'true' },
    /preExistingDestinationData: must be of type boolean/,
  ],
  [
    'copyInNaturalOrder not an array',
    { ...VALID_START, copyInNaturalOrder: { database: 'a' } },
    /copyInNaturalOrder: must be of type array/,
  ],
  [
    'copyInNaturalOrder entry without database',
    { ...VALID_START, copyInNaturalOrder: [{ collections: ['a'] }] },
    /copyInNaturalOrder\[0\]: missing required field "database"/,
  ],
  [
    'copyInNaturalOrder unknown field',
    { ...VALID_START, copyInNaturalOrder: [{ database: 'a', regex: 'b' }] },
    /copyInNaturalOrder\[0\]: unknown field "regex"/,
  ],
  [
    'copyInNaturalOrder invalid database name',
    { ...VALID_START, copyInNaturalOrder: [{ database: 'a/b' }] },
    /copyInNaturalOrder\[0\]\.database: "a\/b" is not a valid database name/,
  ],
  [
    'preExistingDestinationData without a filter',
    { ...VALID_START, preExistingDestinationData: true },
    /preExistingDestinationData: .* needs a namespace filter/,
  ],
  [
    'preExistingDestinationData with write blocking',
    {
      ...VALID_START,
      preExistingDestinationData: true,
      includeNamespaces: [{ database: 'a' }],
      enableUserWriteBlocking: 'destinationOnly',
    },
    /preExistingDestinationData: write blocking is cluster-wide/,
  ],
];

describe('invalid start bodies → 400 InvalidRequest, nothing happens', () => {
  for (const [what, body, description] of INVALID) {
    it(what, async () => {
      const callsBefore = t.engine.calls.length;
      const response = await t.post('/api/v1/start', body);
      assert.equal(response.status, 400);
      assert.equal(response.body.success, false);
      assert.equal(response.body.error, 'InvalidRequest');
      assert.match(response.body.errorDescription, description);
      assert.equal(t.engine.calls.length, callsBefore, 'preflight never ran');
      const progress = await t.progress();
      assert.equal(progress.state, 'IDLE');
      assertProgressRules(progress);
    });
  }
});

describe('valid start bodies reach the engine normalized', () => {
  const VALID: [string, object, object][] = [
    [
      'enableUserWriteBlocking true → sourceAndDestination',
      { enableUserWriteBlocking: true },
      { enableUserWriteBlocking: 'sourceAndDestination' },
    ],
    ['enableUserWriteBlocking false → none', { enableUserWriteBlocking: false }, { enableUserWriteBlocking: 'none' }],
    ['enableUserWriteBlocking string kept', { enableUserWriteBlocking: 'none' }, { enableUserWriteBlocking: 'none' }],
    ['buildIndexes never', { buildIndexes: 'never' }, { buildIndexes: 'never' }],
    ['reversible with write blocking', { reversible: true, enableUserWriteBlocking: 'sourceAndDestination' }, { reversible: true }],
    [
      'filters with names and regular expressions',
      {
        includeNamespaces: [
          { database: 'sales', collectionsRegex: { pattern: '^accounts_.+?$', options: 'ms' } },
          { databaseRegex: { pattern: '^sh', options: 'ix' }, collections: ['orders'] },
        ],
        excludeNamespaces: [],
      },
      {
        includeNamespaces: [
          { database: 'sales', collectionsRegex: { pattern: '^accounts_.+?$', options: 'ms' } },
          { databaseRegex: { pattern: '^sh', options: 'ix' }, collections: ['orders'] },
        ],
        excludeNamespaces: [],
      },
    ],
    ['sharding, createSupportingIndexes defaulted', { sharding: SHARDING }, { sharding: { createSupportingIndexes: false, ...SHARDING } }],
    [
      'sharding with no entries',
      { sharding: { shardingEntries: [], createSupportingIndexes: true } },
      { sharding: { createSupportingIndexes: true, shardingEntries: [] } },
    ],
    ['verification disabled', { verification: { enabled: false } }, { verification: { enabled: false } }],
    [
      "mongosync's defaults: detectRandomId on, an empty destination required, the disk space checked",
      {},
      { detectRandomId: true, preExistingDestinationData: false, skipDiskSpaceCheck: false, copyInNaturalOrder: undefined },
    ],
    [
      'detectRandomId off, skipDiskSpaceCheck on',
      { detectRandomId: false, skipDiskSpaceCheck: true },
      { detectRandomId: false, skipDiskSpaceCheck: true },
    ],
    [
      'copyInNaturalOrder: every database ("."), or some collections of one',
      { copyInNaturalOrder: [{ database: '.' }, { database: 'shop', collections: ['events'] }] },
      { copyInNaturalOrder: [{ database: '.' }, { database: 'shop', collections: ['events'] }] },
    ],
    [
      'preExistingDestinationData with a filter: write blocking off, as mongosync',
      { preExistingDestinationData: true, includeNamespaces: [{ database: 'shop' }] },
      { preExistingDestinationData: true, enableUserWriteBlocking: 'none' },
    ],
  ];
  for (const [what, extra, expected] of VALID) {
    it(what, async () => {
      const app = await buildTestApp();
      try {
        const response = await app.post('/api/v1/start', { ...VALID_START, ...extra });
        assert.deepEqual(response.body, { success: true });
        const started = app.engine.startedWith as unknown as Record<string, unknown>;
        for (const [key, value] of Object.entries(expected)) assert.deepEqual(started[key], value, key);
        assert.equal((await app.progress()).state, 'RUNNING');
      } finally {
        await app.close();
      }
    });
  }
});
