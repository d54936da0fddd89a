/**
 * JSON schemas of the request bodies, checked by fastify (Ajv) before a handler runs. Ajv is
 * configured in server.ts to reject, never coerce or strip: a body either matches or the
 * request fails with InvalidRequest naming the first mismatch (see formatSchemaError).
 */
import { BUILD_INDEXES, WRITE_BLOCKING_MODES } from '../domain/start-request.js';

const name = { type: 'string', minLength: 1 } as const;

const regex = {
  type: 'object',
  additionalProperties: false,
  required: ['pattern'],
  properties: { pattern: name, options: { type: 'string' } },
} as const;

const namespaceFilter = {
  type: 'object',
  additionalProperties: false,
  properties: {
    database: name,
    databaseRegex: regex,
    collections: { type: 'array', minItems: 1, items: name },
    collectionsRegex: regex,
  },
} as const;

const shardKeyPart = {
  type: 'object',
  minProperties: 1,
  maxProperties: 1,
  additionalProperties: { enum: [1, 'hashed'] },
} as const;

const sharding = {
  type: 'object',
  additionalProperties: false,
  required: ['shardingEntries'],
  properties: {
    createSupportingIndexes: { type: 'boolean' },
    shardingEntries: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['database', 'collection', 'shardCollection'],
        properties: {
          database: name,
          collection: name,
          shardCollection: {
            type: 'object',
            additionalProperties: false,
            required: ['key'],
            properties: { key: { type: 'array', minItems: 1, items: shardKeyPart } },
          },
        },
      },
    },
  },
} as const;

export const startBodySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['source', 'destination'],
  properties: {
    source: { type: 'string' },
    destination: { type: 'string' },
    buildIndexes: { enum: [...BUILD_INDEXES] },
    reversible: { type: 'boolean' },
    enableUserWriteBlocking: { enum: [true, false, ...WRITE_BLOCKING_MODES] },
    // An empty include list would select nothing: surely a mistake, so it is refused.
    includeNamespaces: { type: 'array', minItems: 1, items: namespaceFilter },
    excludeNamespaces: { type: 'array', items: namespaceFilter },
    sharding,
    verification: {
      type: 'object',
      additionalProperties: false,
      properties: { enabled: { type: 'boolean' } },
    },
    detectRandomId: { type: 'boolean' },
    copyInNaturalOrder: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['database'],
        properties: { database: name, collections: { type: 'array', minItems: 1, items: name } },
      },
    },
    preExistingDestinationData: { type: 'boolean' },
    skipDiskSpaceCheck: { type: 'boolean' },
  },
} as const;

/** Body of the endpoints without parameters: exactly `{}`. */
export const emptyBodySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {},
} as const;

/**
 * `GET /api/v1/verification?skip=<n>&limit=<n>`: whole numbers (query strings are text and the
 * API never coerces types), `limit` 1–10,000.
 */
export const verificationQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    skip: { type: 'string', pattern: '^[0-9]{1,9}$' },
    limit: { type: 'string', pattern: '^(10000|[1-9][0-9]{0,3})$' },
  },
} as const;

/** The parts of an Ajv error used to describe it. */
export interface SchemaError {
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
}

/** `/includeNamespaces/0/database` → `includeNamespaces[0].database`; '' → `request body`. */
function fieldPath(instancePath: string): string {
  if (instancePath === '') return 'request body';
  return instancePath
    .slice(1)
    .split('/')
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((part, index) => (/^\d+$/.test(part) ? `[${part}]` : index === 0 ? part : `.${part}`))
    .join('');
}

/** One line describing the first schema mismatch, naming the field. */
export function formatSchemaError(error: SchemaError): string {
  const where = fieldPath(error.instancePath);
  const { params } = error;
  switch (error.keyword) {
    case 'additionalProperties':
      return `${where}: unknown field "${String(params.additionalProperty)}"`;
    case 'required':
      return `${where}: missing required field "${String(params.missingProperty)}"`;
    case 'enum':
      return `${where}: must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'type':
      return `${where}: must be ${params.type === 'object' ? 'a JSON object' : `of type ${String(params.type)}`}`;
    case 'minLength':
      return `${where}: must not be empty`;
    default:
      return `${where}: ${error.message ?? 'does not match the schema'}`;
  }
}
