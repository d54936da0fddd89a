/**
 * `$_internalUnpackBucket`, the stage of a time-series view's pipeline: each bucket of the
 * `system.buckets` collection becomes its measurements (time field, meta field, then the other
 * fields in column order), with their exact BSON types.
 */
import { ServerError } from '../../errors.js';
import { serialize } from '../../raw.js';
import { decodeBucket, unpackBucket } from '../../storage/timeseries.js';
import { type Pull, Row } from './row.js';

/** The stage's specification (document_source_internal_unpack_bucket.cpp's fields). */
interface UnpackSpec {
  timeField: string;
  metaField?: string;
  exclude?: string[];
  include?: string[];
}

function parseSpec(arg: unknown): UnpackSpec {
  if (arg === null || typeof arg !== 'object' || Array.isArray(arg)) {
    throw new ServerError(5346500, 'invalid argument to $_internalUnpackBucket stage: expected an object');
  }
  const spec = arg as Record<string, unknown>;
  for (const field of Object.keys(spec)) {
    if (
      ![
        'timeField',
        'metaField',
        'bucketMaxSpanSeconds',
        'exclude',
        'include',
        'assumeNoMixedSchemaData',
        'usesExtendedRange',
        'fixedBuckets',
      ].includes(field)
    ) {
      throw new ServerError(5346506, `unrecognized parameter to $_internalUnpackBucket: ${field}`);
    }
  }
  if (typeof spec.timeField !== 'string') throw new ServerError(5346504, 'timeField field must be a single-element field path string');
  if (spec.metaField !== undefined && typeof spec.metaField !== 'string') {
    throw new ServerError(5346505, 'metaField field must be a single-element field path string');
  }
  if (spec.bucketMaxSpanSeconds === undefined) {
    throw new ServerError(5510600, "The $_internalUnpackBucket stage requires a 'bucketMaxSpanSeconds' parameter");
  }
  return spec as unknown as UnpackSpec;
}

/** Unpacks every bucket pulled from `input` into its measurements. */
export function unpackBuckets(input: Pull, arg: unknown): Pull {
  const spec = parseSpec(arg);
  const project = (m: Record<string, unknown>): Record<string, unknown> => {
    if (spec.include) return Object.fromEntries(Object.entries(m).filter(([k]) => spec.include!.includes(k)));
    if (spec.exclude?.length) return Object.fromEntries(Object.entries(m).filter(([k]) => !spec.exclude!.includes(k)));
    return m;
  };
  let pending: Record<string, unknown>[] = [];
  let at = 0;
  return () => {
    while (at >= pending.length) {
      const bucket = input();
      if (!bucket) return undefined;
      pending = unpackBucket(decodeBucket(bucket.raw), spec.timeField, spec.metaField);
      at = 0;
    }
    return Row.fromRaw(serialize(project(pending[at++])));
  };
}
