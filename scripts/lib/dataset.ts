/**
 * What the data generator writes: databases and collections that look like a real application's
 * (a shop, its analytics, an inventory), with the `_id` types, nesting, indexes and collection
 * kinds a migration must carry: ObjectId, int, string and mixed `_id`s; nested documents and
 * arrays; unique, compound, TTL, hidden, partial and sparse indexes; a capped collection; a view;
 * a collection with a non-simple default collation.
 *
 * Every value comes from the seeded `Random`, so one seed always gives the same bytes.
 */
import {
  Decimal128,
  Double,
  Int32,
  Long,
  ObjectId,
  UUID,
  type CreateIndexesOptions,
  type Document,
  type IndexSpecification,
} from 'mongodb';
import type { Random } from './random.js';

/** One index to create. */
export interface IndexDefinition {
  key: IndexSpecification;
  options: CreateIndexesOptions & { name: string };
}

/** One collection the generator fills. */
export interface CollectionDefinition {
  /** Database name, before the generator's prefix. */
  db: string;
  name: string;
  /** Share of the requested size this collection receives (shares add up to 1). */
  share: number;
  /** `createCollection` options (capped, collation...). */
  options?: Document;
  indexes: IndexDefinition[];
  /** The `i`-th document (0-based). */
  document(i: number, random: Random): Document;
}

/** A view the generator creates after the collections. */
export interface ViewDefinition {
  db: string;
  name: string;
  viewOn: string;
  pipeline: Document[];
}

/** Dates are fixed (not "now") so the data is the same on every run. */
const BASE_TIME_MS = Date.UTC(2025, 0, 1);

/** TTL long enough that no generated document expires for decades (dates are fixed in 2025). */
export const GENERATED_TTL_SECONDS = 60 * 365 * 86_400;

const WORDS = (
  'river stone amber quick lantern copper meadow harbor silent orbit velvet cedar thunder ' +
  'maple signal winter garden pixel canyon ember falcon glacier hollow island jasmine kernel ' +
  'lunar marble nectar oasis prairie quartz raven saffron tundra umber violet willow zephyr'
).split(' ');
const FIRST_NAMES = ['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Frances', 'Ken', 'Margaret', 'Dennis'];
const LAST_NAMES = ['Lovelace', 'Hopper', 'Turing', 'Dijkstra', 'Liskov', 'Knuth', 'Allen', 'Thompson', 'Hamilton', 'Ritchie'];
const CITIES = ['Lisbon', 'Oslo', 'Nairobi', 'Osaka', 'Lima', 'Quebec', 'Tallinn', 'Perth', 'Dakar', 'Porto'];
const COUNTRIES = ['PT', 'NO', 'KE', 'JP', 'PE', 'CA', 'EE', 'AU', 'SN'];
const CATEGORIES = ['books', 'garden', 'kitchen', 'toys', 'audio', 'sports', 'office'];
const STATUSES = ['open', 'paid', 'shipped', 'delivered', 'cancelled'];

function words(random: Random, min: number, max: number): string {
  const count = random.int(min, max);
  const out: string[] = [];
  for (let i = 0; i < count; i++) out.push(random.pick(WORDS));
  return out.join(' ');
}

/**
 * The ObjectId a driver would give the `i`-th document of a collection: a timestamp that grows
 * with `i`, five bytes fixed per writing process (here: per collection, `process`), and a counter.
 * Being a function of `i`, it lets other collections refer to a document (orders → customers).
 */
function objectId(process: number, i: number): ObjectId {
  const bytes = new Uint8Array(12);
  const seconds = Math.floor(BASE_TIME_MS / 1000) + i;
  bytes[0] = (seconds >>> 24) & 0xff;
  bytes[1] = (seconds >>> 16) & 0xff;
  bytes[2] = (seconds >>> 8) & 0xff;
  bytes[3] = seconds & 0xff;
  for (let b = 0; b < 5; b++) bytes[4 + b] = (process * (b + 7) * 31) & 0xff;
  bytes[9] = (i >>> 16) & 0xff;
  bytes[10] = (i >>> 8) & 0xff;
  bytes[11] = i & 0xff;
  return new ObjectId(bytes);
}

/** The writing "process" of each collection with ObjectId keys. */
const PROCESS = { customers: 1, auditLog: 2, pageViews: 3, mixedKeys: 4 } as const;

function uuid(random: Random): UUID {
  const bytes = random.bytes(16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x40; // version 4
  bytes[8] = (bytes[8]! & 0x3f) | 0x80; // RFC 4122 variant
  return new UUID(bytes);
}

function date(random: Random, i: number): Date {
  return new Date(BASE_TIME_MS + i * 60_000 + random.int(0, 59_999));
}

function address(random: Random): Document {
  return {
    street: `${random.int(1, 999)} ${words(random, 1, 2)} street`,
    city: random.pick(CITIES),
    country: random.pick(COUNTRIES),
    zip: String(random.int(10000, 99999)),
    location: { type: 'Point', coordinates: [random.int(-180, 180) + 0.5, random.int(-90, 90) + 0.25] },
  };
}

/**
 * A mixed `_id` for the `i`-th document: ints, strings, ObjectIds, longs, doubles, UUIDs and
 * subdocuments in turn, all distinct under MongoDB's comparison (doubles are never integral).
 */
function mixedId(random: Random, i: number): unknown {
  switch (i % 7) {
    case 0:
      return new Int32(i);
    case 1:
      return `key-${String(i).padStart(8, '0')}`;
    case 2:
      return objectId(PROCESS.mixedKeys, i);
    case 3:
      return Long.fromBigInt(2n ** 40n + BigInt(i));
    case 4:
      return new Double(i + 0.5);
    case 5:
      return uuid(random);
    default:
      return { region: random.pick(COUNTRIES), seq: new Int32(i) };
  }
}

export const COLLECTIONS: readonly CollectionDefinition[] = [
  {
    db: 'shop',
    name: 'customers',
    share: 0.2,
    indexes: [
      { key: { email: 1 }, options: { name: 'email_unique', unique: true } },
      { key: { loyaltyId: 1 }, options: { name: 'loyaltyId_sparse', sparse: true } },
      { key: { 'address.country': 1, 'name.last': 1 }, options: { name: 'country_lastName' } },
    ],
    document: (i, random) => {
      const first = random.pick(FIRST_NAMES);
      const last = random.pick(LAST_NAMES);
      return {
        _id: objectId(PROCESS.customers, i),
        name: { first, last },
        email: `${first}.${last}.${i}@example.com`.toLowerCase(),
        ...(random.chance(0.3) ? { loyaltyId: new Int32(100_000 + i) } : {}),
        address: address(random),
        tags: Array.from({ length: random.int(0, 4) }, () => random.pick(WORDS)),
        marketing: { optIn: random.chance(0.5), channels: random.chance(0.5) ? ['email', 'sms'] : ['email'] },
        balance: Decimal128.fromString(`${random.int(0, 99_999)}.${String(random.int(0, 99)).padStart(2, '0')}`),
        createdAt: date(random, i),
      };
    },
  },
  {
    db: 'shop',
    name: 'orders',
    share: 0.3,
    indexes: [
      { key: { customerId: 1, createdAt: -1 }, options: { name: 'customer_recent' } },
      {
        key: { status: 1 },
        options: { name: 'open_orders', partialFilterExpression: { status: 'open' } },
      },
    ],
    document: (i, random) => {
      const items = Array.from({ length: random.int(1, 6) }, () => ({
        sku: `SKU-${String(random.int(0, 9999)).padStart(6, '0')}`,
        qty: new Int32(random.int(1, 5)),
        price: new Double(random.int(100, 50_000) / 100),
      }));
      return {
        _id: new Int32(i + 1),
        // Customers are written before orders; refer to one that exists at any size.
        customerId: objectId(PROCESS.customers, random.int(0, Math.min(i, 99))),
        status: random.pick(STATUSES),
        items,
        total: new Double(items.reduce((sum, item) => sum + item.qty.value * item.price.value, 0)),
        shipping: { method: random.pick(['standard', 'express', 'pickup']), address: address(random) },
        ...(random.chance(0.2) ? { notes: words(random, 3, 20) } : {}),
        createdAt: date(random, i),
      };
    },
  },
  {
    db: 'shop',
    name: 'products',
    share: 0.15,
    indexes: [
      { key: { category: 1 }, options: { name: 'category_hidden', hidden: true } },
      { key: { price: -1 }, options: { name: 'price_desc' } },
    ],
    document: (i, random) => ({
      _id: `SKU-${String(i).padStart(6, '0')}`,
      name: words(random, 2, 4),
      category: random.pick(CATEGORIES),
      price: new Double(random.int(100, 50_000) / 100),
      stock: new Int32(random.int(0, 500)),
      attributes: { color: random.pick(WORDS), weightGrams: new Int32(random.int(10, 20_000)) },
      ratings: Array.from({ length: random.int(0, 8) }, () => new Int32(random.int(1, 5))),
      description: words(random, 5, 60),
    }),
  },
  {
    db: 'shop',
    name: 'auditLog',
    share: 0.05,
    // Sized by the generator to hold its whole share, so nothing written is rolled off.
    options: { capped: true },
    indexes: [],
    document: (i, random) => ({
      _id: objectId(PROCESS.auditLog, i),
      at: date(random, i),
      actor: `${random.pick(FIRST_NAMES)}.${random.pick(LAST_NAMES)}`.toLowerCase(),
      action: random.pick(['login', 'logout', 'update', 'refund', 'export']),
      detail: { ip: `10.${random.int(0, 255)}.${random.int(0, 255)}.${random.int(1, 254)}` },
    }),
  },
  {
    db: 'analytics',
    name: 'pageViews',
    share: 0.15,
    indexes: [
      { key: { createdAt: 1 }, options: { name: 'createdAt_ttl', expireAfterSeconds: GENERATED_TTL_SECONDS } },
      { key: { url: 1, createdAt: 1 }, options: { name: 'url_time' } },
    ],
    document: (i, random) => ({
      _id: objectId(PROCESS.pageViews, i),
      url: `/${random.pick(CATEGORIES)}/${random.pick(WORDS)}`,
      sessionId: uuid(random),
      referrer: random.chance(0.4) ? null : `https://${random.pick(WORDS)}.example/`,
      durationMs: new Int32(random.int(5, 120_000)),
      createdAt: new Date(BASE_TIME_MS + i * 1000),
    }),
  },
  {
    db: 'analytics',
    name: 'mixedKeys',
    share: 0.1,
    indexes: [],
    document: (i, random) => ({
      _id: mixedId(random, i),
      kind: i % 7,
      payload: { text: words(random, 2, 30), values: Array.from({ length: random.int(0, 5) }, () => random.int(-1000, 1000)) },
    }),
  },
  {
    db: 'inventory',
    name: 'stock',
    share: 0.05,
    indexes: [{ key: { warehouse: 1, sku: 1 }, options: { name: 'warehouse_sku_unique', unique: true } }],
    document: (i, random) => ({
      _id: Long.fromNumber(1_000_000_000 + i),
      warehouse: `WH-${i % 50}`,
      sku: `SKU-${String(i).padStart(6, '0')}`,
      quantity: new Int32(random.int(0, 10_000)),
      lastCounted: date(random, i),
    }),
  },
  {
    db: 'inventory',
    name: 'labels',
    share: 0,
    // Case-insensitive default collation: strings in its `_id` index order by it.
    options: { collation: { locale: 'en', strength: 2 } },
    indexes: [],
    document: (i, random) => ({ _id: `${random.pick(WORDS)}-${i}`, color: random.pick(WORDS) }),
  },
];

export const VIEWS: readonly ViewDefinition[] = [
  {
    db: 'shop',
    name: 'orderTotalsByStatus',
    viewOn: 'orders',
    pipeline: [{ $group: { _id: '$status', total: { $sum: '$total' }, orders: { $sum: 1 } } }],
  },
];

/** Documents of the small fixed-size collections (share 0). */
export const FIXED_DOCUMENT_COUNT = 200;
