import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { compileRegexFilter, createNamespaceSelector } from '../../src/plan/namespaces.js';
import type { NamespaceFilter } from '../../src/domain/start-request.js';
import { METADATA_DATABASE } from '../../src/domain/namespaces.js';
import { InvalidNamespaceFilter } from '../../src/errors/errors.js';

describe('namespace selection: what is never synced', () => {
  const everything = createNamespaceSelector();

  it('selects ordinary namespaces when no filter is given', () => {
    assert.equal(everything.selects('shop', 'orders'), true);
    assert.equal(everything.selectsDatabase('shop'), true);
  });

  it('never selects admin, local, config, the metadata database or Atlas’s __mdb_internal ones, even when included by name', () => {
    const selector = createNamespaceSelector([
      { database: 'admin' },
      { database: 'local' },
      { database: 'config' },
      { database: METADATA_DATABASE },
      { database: '__mdb_internal_search' },
      { databaseRegex: { pattern: '.*' } },
    ]);
    // Atlas's own databases (`__mdb_internal…`) are left alone as mongosync leaves them.
    for (const db of ['admin', 'local', 'config', METADATA_DATABASE, '__mdb_internal_search', '__mdb_internal_mongosync']) {
      assert.equal(selector.selectsDatabase(db), false, db);
      assert.equal(selector.selects(db, 'anything'), false, db);
      assert.equal(everything.selects(db, 'anything'), false, db);
    }
  });

  it('never selects system.* collections', () => {
    const selector = createNamespaceSelector([{ database: 'shop', collections: ['system.views', 'orders'] }]);
    assert.equal(selector.selects('shop', 'system.views'), false);
    assert.equal(everything.selects('shop', 'system.buckets.weather'), false);
    assert.equal(everything.selects('shop', 'systemic'), true);
    assert.equal(selector.selects('shop', 'orders'), true);
  });

  it('names a metadata database that says it is Ferry’s and reserved', () => {
    assert.match(METADATA_DATABASE, /^ferry_.*reserved/);
    assert.ok(METADATA_DATABASE.length < 64, 'fits MongoDB’s database name limit');
  });
});

describe('namespace selection: includeNamespaces', () => {
  it('a database entry alone selects the whole database; databases not listed are filtered out', () => {
    const selector = createNamespaceSelector([{ database: 'shop' }]);
    assert.equal(selector.selects('shop', 'orders'), true);
    assert.equal(selector.selects('shop', 'customers'), true);
    assert.equal(selector.selects('blog', 'posts'), false);
    assert.equal(selector.selectsDatabase('blog'), false);
    assert.equal(selector.selectsDatabase('shop'), true);
  });

  it('listed collections select only those collections', () => {
    const selector = createNamespaceSelector([{ database: 'shop', collections: ['orders', 'items'] }]);
    assert.equal(selector.selects('shop', 'orders'), true);
    assert.equal(selector.selects('shop', 'items'), true);
    assert.equal(selector.selects('shop', 'customers'), false);
    assert.equal(selector.selectsDatabase('shop'), true);
  });

  it('collectionsRegex selects matching collections, unanchored like $regex, with options', () => {
    const selector = createNamespaceSelector([
      { database: 'sales', collectionsRegex: { pattern: '^accounts_.+?$', options: 'ms' } },
      { database: 'logs', collectionsRegex: { pattern: 'ERR', options: 'i' } },
    ]);
    assert.equal(selector.selects('sales', 'accounts_eu'), true);
    assert.equal(selector.selects('sales', 'old_accounts_eu'), false);
    assert.equal(selector.selects('logs', 'app_errors'), true, 'unanchored and case-insensitive');
    assert.equal(selector.selects('logs', 'app_info'), false);
  });

  it('collections and collectionsRegex in one entry select either', () => {
    const selector = createNamespaceSelector([{ database: 'shop', collections: ['orders'], collectionsRegex: { pattern: '^tmp_' } }]);
    assert.equal(selector.selects('shop', 'orders'), true);
    assert.equal(selector.selects('shop', 'tmp_1'), true);
    assert.equal(selector.selects('shop', 'items'), false);
  });

  it('databaseRegex selects matching databases; an entry takes database or databaseRegex, not both', () => {
    const selector = createNamespaceSelector([{ databaseRegex: { pattern: '^tenant_\\d+$' } }]);
    assert.equal(selector.selects('tenant_1', 'users'), true);
    assert.equal(selector.selects('tenant_x', 'users'), false);
    assert.throws(() => createNamespaceSelector([{ database: 'alpha', databaseRegex: { pattern: '^beta$' } }]), /not both/);
  });

  it('several entries add up', () => {
    const selector = createNamespaceSelector([
      { database: 'shop', collections: ['orders'] },
      { database: 'shop', collections: ['items'] },
      { database: 'blog' },
    ]);
    assert.deepEqual(
      ['orders', 'items', 'customers'].map((c) => selector.selects('shop', c)),
      [true, true, false],
    );
    assert.equal(selector.selects('blog', 'posts'), true);
  });

  it('an empty include list is the same as none', () => {
    assert.equal(createNamespaceSelector([]).selects('shop', 'orders'), true);
  });
});

describe('namespace selection: excludeNamespaces', () => {
  it('excludes a whole database or some collections, without include filters', () => {
    const selector = createNamespaceSelector(undefined, [{ database: 'scratch' }, { database: 'shop', collections: ['sessions'] }]);
    assert.equal(selector.selectsDatabase('scratch'), false);
    assert.equal(selector.selects('scratch', 'a'), false);
    assert.equal(selector.selects('shop', 'sessions'), false);
    assert.equal(selector.selects('shop', 'orders'), true);
    assert.equal(selector.selectsDatabase('shop'), true, 'only part of shop is excluded');
    assert.equal(selector.selects('other', 'x'), true);
  });

  it('exclusion wins over inclusion', () => {
    const selector = createNamespaceSelector(
      [{ database: 'shop' }, { databaseRegex: { pattern: '^tenant_' } }],
      [{ database: 'shop', collectionsRegex: { pattern: '^cache' } }, { databaseRegex: { pattern: '_test$' } }],
    );
    assert.equal(selector.selects('shop', 'orders'), true);
    assert.equal(selector.selects('shop', 'cache_pages'), false);
    assert.equal(selector.selects('tenant_1', 'users'), true);
    assert.equal(selector.selects('tenant_1_test', 'users'), false);
    assert.equal(selector.selectsDatabase('tenant_1_test'), false);
  });

  it('a namespace is selected exactly when included, not reserved, and not excluded (random filters)', () => {
    const name = fc.constantFrom('a', 'b', 'ab', 'system.x', 'admin', 'c1');
    const entry = fc.record(
      {
        database: fc.constantFrom('a', 'b', 'admin'),
        collections: fc.array(name, { maxLength: 2 }),
      },
      { requiredKeys: ['database'] },
    );
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 3 }), fc.array(entry, { maxLength: 3 }), name, name, (inc, exc, db, coll) => {
        const selector = createNamespaceSelector(inc, exc);
        const hit = (e: NamespaceFilter) => e.database === db && (e.collections === undefined || e.collections.includes(coll));
        const expected =
          !['admin', 'local', 'config'].includes(db) &&
          !coll.startsWith('system.') &&
          (inc.length === 0 || inc.some(hit)) &&
          !exc.some(hit);
        assert.equal(selector.selects(db, coll), expected);
        if (expected) assert.equal(selector.selectsDatabase(db), true, 'a selected collection’s database is selected');
      }),
      { numRuns: 500 },
    );
  });
});

describe('namespace filter regular expressions', () => {
  it('supports the x option by ignoring whitespace and comments outside character classes', () => {
    const regex = compileRegexFilter({ pattern: '^ orders _ \\d+  # numbered\n [ ]? $', options: 'x' }, 'f');
    assert.equal(regex.test('orders_12'), true);
    assert.equal(regex.test('orders_12 '), true, 'the space inside [ ] still counts');
    assert.equal(regex.test('orders _12'), false);
  });

  it('rejects unknown options, invalid patterns and entries without a database, naming the field', () => {
    assert.throws(
      () => createNamespaceSelector([{ database: 'a', collectionsRegex: { pattern: 'x', options: 'g' } }]),
      (e: unknown) => e instanceof InvalidNamespaceFilter && /includeNamespaces\[0\]\.collectionsRegex\.options/.test(e.message),
    );
    assert.throws(
      () => createNamespaceSelector(undefined, [{ databaseRegex: { pattern: '(' } }]),
      /excludeNamespaces\[0\]\.databaseRegex\.pattern "\(" is not a valid regular expression/,
    );
    assert.throws(() => createNamespaceSelector([{ collections: ['x'] }]), /needs "database" or "databaseRegex"/);
  });
});
