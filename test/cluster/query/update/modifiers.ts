/**
 * The update operators that act on one field (`$set`, `$inc`, `$push`, ...): how each parses its
 * argument, what it does to an existing value and what value it gives a missing field, with
 * mongod's no-op rules and error messages. `$rename` spans two paths and lives in apply.ts.
 */
import { Query } from '../../mingo.js';
import { Int32, Timestamp } from 'bson';
import { ServerError } from '../../errors.js';
import { compareValues } from '../../bson-order.js';
import { describeElement, describeValue } from '../../storage/keys.js';
import { add, bitwise, debugString, identical, isTypedNumber, multiply, type TypedNumber } from './arithmetic.js';
import { BsonType, DocNode, Leaf, type Slot, binaryEqual, isNumericType, promotedOf, slotType, toLeaf, typeName, typedOf } from './tree.js';

/** Facts about the document and the write that operators need. */
export interface ApplyEnv {
  /** The document's `_id` rendered as mongod's messages show it: `_id: 1`. */
  idText: string;
  /** True while building an upserted document (`$setOnInsert` applies). */
  insert: boolean;
  /** `$currentDate` value (one instant per write). */
  now: Date;
  /** `$currentDate: {$type: 'timestamp'}` value. */
  timestamp: Timestamp;
}

export type Outcome =
  | { kind: 'noop' }
  /** The field now holds `value`; `appendedFrom` marks a pure append from that index (`$push`). */
  | { kind: 'set'; value: Slot; appendedFrom?: number }
  | { kind: 'remove' };

export interface FieldTarget {
  /** Full path of the field (array indexes resolved). */
  path: string[];
  /** The field is an array element (an `$unset` then writes null). */
  inArray: boolean;
}

export interface Modifier {
  readonly operator: string;
  /** Applies only while inserting an upserted document (`$setOnInsert`). */
  readonly insertOnly?: boolean;
  /** A path that cannot exist is a no-op rather than an error (`$unset`). */
  readonly allowNonViablePath?: boolean;
  modify(current: Slot, target: FieldTarget, env: ApplyEnv): Outcome;
  /** The value a missing field gets; undefined when the operator creates nothing. */
  create?(target: FieldTarget, env: ApplyEnv): Slot;
}

const NOOP: Outcome = { kind: 'noop' };

function lastPart(target: FieldTarget): string {
  return target.path[target.path.length - 1];
}

function rendered(name: string, leaf: Leaf): string {
  return describeElement(name, leaf.typed());
}

function arrayNode(slot: Slot): DocNode | undefined {
  if (slot instanceof DocNode) return slot.isArray ? slot : undefined;
  return slot.type === BsonType.Array ? DocNode.parse(slot.bytes, true) : undefined;
}

/** `$set` (and `$setOnInsert`): a no-op when the value is already exactly there. */
function setModifier(operator: string, value: Leaf): Modifier {
  return {
    operator,
    insertOnly: operator === '$setOnInsert',
    modify: (current) => (binaryEqual(current, value) ? NOOP : { kind: 'set', value }),
    create: () => value,
  };
}

const unsetModifier: Modifier = {
  operator: '$unset',
  allowNonViablePath: true,
  // An array element is not removed but set to null, so positions do not shift.
  modify: (current, target) =>
    target.inArray ? (slotType(current) === BsonType.Null ? NOOP : { kind: 'set', value: Leaf.null() }) : { kind: 'remove' },
};

function arithmeticModifier(operator: '$inc' | '$mul', path: string, arg: Leaf): Modifier {
  const verb = operator === '$inc' ? 'increment' : 'multiply';
  if (!isNumericType(arg.type)) {
    throw new ServerError('TypeMismatch', `Cannot ${verb} with non-numeric argument: {${rendered(path, arg)}}`);
  }
  const operand = arg.typed() as TypedNumber;
  return {
    operator,
    modify: (current, target, env) => {
      if (!isNumericType(slotType(current))) {
        throw new ServerError(
          'TypeMismatch',
          `Cannot apply ${operator} to a value of non-numeric type. {${env.idText}} has the field '${lastPart(target)}' of non-numeric type ${typeName(slotType(current))}`,
        );
      }
      const before = typedOf(current) as TypedNumber;
      const after = operator === '$inc' ? add(operand, before) : multiply(operand, before);
      if (after !== undefined && identical(after, before)) return NOOP;
      if (after === undefined) {
        throw new ServerError(
          'BadValue',
          `Failed to apply ${operator} operations to current value (${debugString(before)}) for document {${env.idText}}`,
        );
      }
      return { kind: 'set', value: Leaf.of(after) };
    },
    create: () => {
      if (operator === '$inc') return arg;
      // $mul on a missing field stores 0 of the operand's type.
      return Leaf.of(multiply(operand, new Int32(0)));
    },
  };
}

function compareModifier(operator: '$min' | '$max', value: Leaf): Modifier {
  const wanted = operator === '$min' ? -1 : 1;
  return {
    operator,
    modify: (current) => {
      const c = compareValues(value.typed(), typedOf(current));
      return Math.sign(c) === wanted ? { kind: 'set', value } : NOOP;
    },
    create: () => value,
  };
}

function currentDateModifier(path: string, arg: Leaf): Modifier {
  let asTimestamp = false;
  if (arg.type === BsonType.Object) {
    const spec = arg.typed() as Record<string, unknown>;
    const keys = Object.keys(spec);
    if (keys.length !== 1 || keys[0] !== '$type') {
      throw new ServerError(
        'BadValue',
        `The only valid field of the option is '$type': {$currentDate: {field : {$type: 'date/timestamp'}}}`,
      );
    }
    if (spec.$type !== 'date' && spec.$type !== 'timestamp') {
      throw new ServerError(
        'BadValue',
        `The '$type' string field is required to be 'date' or 'timestamp': {$currentDate: {field : {$type: 'date'}}}`,
      );
    }
    asTimestamp = spec.$type === 'timestamp';
  } else if (arg.type !== BsonType.Bool) {
    throw new ServerError(
      'BadValue',
      `${rendered(path, arg)} is not valid type for $currentDate. Please use a boolean ('true') or a $type expression ({$type: 'timestamp/date'}).`,
    );
  }
  const value = (env: ApplyEnv) => Leaf.of(asTimestamp ? env.timestamp : env.now);
  return { operator: '$currentDate', modify: (_c, _t, env) => ({ kind: 'set', value: value(env) }), create: (_t, env) => value(env) };
}

/** A whole-number argument (`$slice`, `$position`), as mongod's parseIntegerElementToLong. */
function integerArgument(leaf: Leaf): number | undefined {
  if (!isNumericType(leaf.type)) return undefined;
  const n = Number(String(leaf.typed()));
  return Number.isInteger(n) ? n : undefined;
}

/** Reads a sort key for `$push: {$sort: {field: 1}}`: the value at a dotted path, null if missing. */
function sortKeyOf(value: unknown, path: string): unknown {
  let current: unknown = value;
  for (const part of path.split('.')) {
    if (current === null || typeof current !== 'object' || '_bsontype' in current || current instanceof Date) return null;
    current = (current as Record<string, unknown>)[part];
    if (current === undefined) return null;
  }
  return current;
}

function pushSorter(spec: Leaf): (a: Slot, b: Slot) => number {
  if (isNumericType(spec.type)) {
    const n = Number(String(spec.typed()));
    if (n !== 1 && n !== -1) throw new ServerError('BadValue', 'The $sort element value must be either 1 or -1');
    return (a, b) => n * compareValues(typedOf(a), typedOf(b));
  }
  if (spec.type !== BsonType.Object) {
    throw new ServerError('BadValue', 'The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} to sort embedded fields');
  }
  const pattern = spec.typed() as Record<string, unknown>;
  const fields = Object.entries(pattern);
  if (fields.length === 0) throw new ServerError('BadValue', 'The $sort pattern is empty when it should be a set of fields.');
  const order = fields.map(([field, dir]) => {
    if (field.length === 0 || field.split('.').some((p) => p.length === 0)) {
      throw new ServerError('BadValue', `The $sort field is a dotted field but has an empty part: ${field}`);
    }
    const d = isTypedNumber(dir) ? Number(String(dir)) : Number.NaN;
    if (d !== 1 && d !== -1) throw new ServerError('BadValue', 'The $sort element value must be either 1 or -1');
    return { field, dir: d };
  });
  return (a, b) => {
    const x = typedOf(a);
    const y = typedOf(b);
    for (const { field, dir } of order) {
      const c = compareValues(sortKeyOf(x, field), sortKeyOf(y, field));
      if (c !== 0) return c * dir;
    }
    return 0;
  };
}

function pushModifier(arg: Leaf): Modifier {
  let values: Slot[];
  let slice: number | undefined;
  let position: number | undefined;
  let sort: ((a: Slot, b: Slot) => number) | undefined;
  const spec = arg.type === BsonType.Object ? DocNode.parse(arg.bytes) : undefined;
  if (spec && spec.names.includes('$each')) {
    const seen = new Set<string>();
    for (let i = 0; i < spec.length; i++) {
      const clause = spec.names[i];
      if (!['$each', '$slice', '$sort', '$position'].includes(clause)) {
        throw new ServerError('BadValue', `Unrecognized clause in $push: ${clause}`);
      }
      if (seen.has(clause)) throw new ServerError('BadValue', `Only one ${clause} is supported.`);
      seen.add(clause);
    }
    const each = toLeaf(spec.get('$each')!);
    if (each.type !== BsonType.Array) {
      throw new ServerError('BadValue', `The argument to $each in $push must be an array but it was of type: ${typeName(each.type)}`);
    }
    values = DocNode.parse(each.bytes, true).values;
    const sliceArg = spec.get('$slice');
    if (sliceArg) {
      slice = integerArgument(toLeaf(sliceArg));
      if (slice === undefined) {
        throw new ServerError(
          'BadValue',
          `The value for $slice must be an integer value but was given type: ${typeName(slotType(sliceArg))}`,
        );
      }
    }
    const sortArg = spec.get('$sort');
    if (sortArg) sort = pushSorter(toLeaf(sortArg));
    const positionArg = spec.get('$position');
    if (positionArg) {
      position = integerArgument(toLeaf(positionArg));
      if (position === undefined) {
        throw new ServerError(
          'BadValue',
          `The value for $position must be an integer value, not of type: ${typeName(slotType(positionArg))}`,
        );
      }
    }
  } else {
    values = [arg];
  }

  const push = (array: DocNode): Outcome => {
    const size = array.length;
    let appendedFrom: number | undefined;
    let changed = values.length > 0;
    if (values.length > 0) {
      let at: number;
      if (size === 0 || position === undefined || position > size) at = size;
      else if (position >= 0) at = position;
      else at = Math.max(0, size + position);
      // Only an append to a non-empty array is logged element by element.
      if (size > 0 && at === size && (position === undefined || position > size)) appendedFrom = size;
      array.values.splice(at, 0, ...values);
    }
    if (sort) {
      appendedFrom = undefined;
      changed = true;
      const sorted = array.values.map((v, i) => ({ v, i })).sort((a, b) => sort!(a.v, b.v) || a.i - b.i);
      sorted.forEach((s, i) => (array.values[i] = s.v));
    }
    if (slice !== undefined && array.length > Math.abs(slice)) {
      appendedFrom = undefined;
      changed = true;
      if (slice >= 0) array.values.splice(slice);
      else array.values.splice(0, array.length + slice);
    }
    return changed ? { kind: 'set', value: array, appendedFrom } : NOOP;
  };

  return {
    operator: '$push',
    modify: (current, target, env) => {
      const array = arrayNode(current);
      if (!array) {
        throw new ServerError(
          'BadValue',
          `The field '${target.path.join('.')}' must be an array but is of type ${typeName(slotType(current))} in document {${env.idText}}`,
        );
      }
      const copy = new DocNode(true, [], [...array.values]);
      return push(copy);
    },
    create: () => {
      const array = DocNode.empty(true);
      push(array);
      return array;
    },
  };
}

function addToSetModifier(arg: Leaf): Modifier {
  let candidates: Slot[] = [arg];
  if (arg.type === BsonType.Object) {
    const spec = DocNode.parse(arg.bytes);
    if (spec.names[0] === '$each') {
      if (spec.length > 1) {
        throw new ServerError('BadValue', `Found unexpected fields after $each in $addToSet: ${describeValue(arg.typed())}`);
      }
      const each = toLeaf(spec.values[0]);
      if (each.type !== BsonType.Array) {
        throw new ServerError('BadValue', `The argument to $each in $addToSet must be an array but it was of type ${typeName(each.type)}`);
      }
      candidates = DocNode.parse(each.bytes, true).values;
    }
  }
  // Duplicates among the values to add are dropped up front (first occurrence kept).
  const unique: Slot[] = [];
  for (const c of candidates) {
    if (!unique.some((u) => compareValues(typedOf(u), typedOf(c)) === 0)) unique.push(c);
  }
  return {
    operator: '$addToSet',
    modify: (current, target) => {
      const array = arrayNode(current);
      if (!array) {
        throw new ServerError(
          'BadValue',
          `Cannot apply $addToSet to non-array field. Field named '${lastPart(target)}' has non-array type ${typeName(slotType(current))}`,
        );
      }
      const present = array.values.map(typedOf);
      const added = unique.filter((u) => !present.some((p) => compareValues(p, typedOf(u)) === 0));
      if (added.length === 0) return NOOP;
      return { kind: 'set', value: new DocNode(true, [], [...array.values, ...added]) };
    },
    create: () => new DocNode(true, [], [...unique]),
  };
}

function popModifier(path: string, arg: Leaf): Modifier {
  if (!isNumericType(arg.type)) throw new ServerError('FailedToParse', `Expected a number in: ${rendered(path, arg)}`);
  const n = Number(String(arg.typed()));
  if (n !== 1 && n !== -1) throw new ServerError('FailedToParse', `$pop expects 1 or -1, found: ${String(arg.typed())}`);
  return {
    operator: '$pop',
    modify: (current, target) => {
      const array = arrayNode(current);
      if (!array) {
        throw new ServerError(
          'BadValue',
          `Path '${target.path.join('.')}' contains an element of non-array type '${typeName(slotType(current))}'`,
        );
      }
      if (array.length === 0) return NOOP;
      const values = n < 0 ? array.values.slice(1) : array.values.slice(0, -1);
      return { kind: 'set', value: new DocNode(true, [], values) };
    },
  };
}

/** Removes the elements `remove` selects; a no-op when none is. */
function cullModifier(operator: '$pull' | '$pullAll', remove: (element: Slot) => boolean): Modifier {
  return {
    operator,
    modify: (current) => {
      const array = arrayNode(current);
      if (!array) throw new ServerError('BadValue', `Cannot apply ${operator} to a non-array value`);
      const kept = array.values.filter((v) => !remove(v));
      return kept.length === array.length ? NOOP : { kind: 'set', value: new DocNode(true, [], kept) };
    },
  };
}

function pullModifier(arg: Leaf): Modifier {
  const condition = arg.promoted();
  const first = arg.type === BsonType.Object ? Object.keys(condition as object)[0] : undefined;
  if (arg.type === BsonType.Object && !(first !== undefined && first.startsWith('$'))) {
    // A document condition is a query each document element must satisfy.
    const query = new Query(condition as Record<string, unknown>);
    return cullModifier('$pull', (e) => slotType(e) === BsonType.Object && query.test(promotedOf(e) as Record<string, unknown>));
  }
  if (arg.type === BsonType.Object || arg.type === 0x0b) {
    // Operators ({$gte: 6}) and regexes apply to each element itself.
    const query = new Query({ v: condition });
    return cullModifier('$pull', (e) => query.test({ v: promotedOf(e) }));
  }
  const wanted = arg.typed();
  return cullModifier('$pull', (e) => compareValues(typedOf(e), wanted) === 0);
}

function pullAllModifier(arg: Leaf): Modifier {
  if (arg.type !== BsonType.Array) {
    throw new ServerError('BadValue', `$pullAll requires an array argument but was given a ${typeName(arg.type)}`);
  }
  const values = arg.typed() as unknown[];
  return cullModifier('$pullAll', (e) => {
    const v = typedOf(e);
    return values.some((w) => compareValues(v, w) === 0);
  });
}

function bitModifier(arg: Leaf): Modifier {
  if (arg.type !== BsonType.Object) {
    throw new ServerError(
      'BadValue',
      `The $bit modifier is not compatible with a ${typeName(arg.type)}. You must pass in an embedded document: {$bit: {field: {and/or/xor: #}}`,
    );
  }
  const spec = DocNode.parse(arg.bytes);
  if (spec.length === 0) {
    throw new ServerError('BadValue', 'You must pass in at least one bitwise operation. The format is: {$bit: {field: {and/or/xor: #}}');
  }
  const ops = spec.names.map((name, i) => {
    const operand = toLeaf(spec.values[i]);
    if (name !== 'and' && name !== 'or' && name !== 'xor') {
      throw new ServerError(
        'BadValue',
        `The $bit modifier only supports 'and', 'or', and 'xor', not '${name}' which is an unknown operator: {${rendered(name, operand)}}`,
      );
    }
    if (operand.type !== BsonType.Int32 && operand.type !== BsonType.Int64) {
      throw new ServerError(
        'BadValue',
        `The $bit modifier field must be an Integer(32/64 bit); a '${typeName(operand.type)}' is not supported here: {${rendered(name, operand)}}`,
      );
    }
    return { op: name as 'and' | 'or' | 'xor', operand: operand.typed() as TypedNumber };
  });
  const apply = (start: TypedNumber) => ops.reduce<TypedNumber>((acc, { op, operand }) => bitwise(acc, operand, op)!, start);
  return {
    operator: '$bit',
    modify: (current, target, env) => {
      const type = slotType(current);
      if (type !== BsonType.Int32 && type !== BsonType.Int64) {
        throw new ServerError(
          'BadValue',
          `Cannot apply $bit to a value of non-integral type.{${env.idText}} has the field ${lastPart(target)} of non-integer type ${typeName(type)}`,
        );
      }
      const before = typedOf(current) as TypedNumber;
      const after = apply(before);
      return identical(after, before) ? NOOP : { kind: 'set', value: Leaf.of(after) };
    },
    create: () => Leaf.of(apply(new Int32(0))),
  };
}

/** The single-field update operators mongod knows (besides `$rename`). */
export const FIELD_OPERATORS = new Set([
  '$set',
  '$setOnInsert',
  '$unset',
  '$inc',
  '$mul',
  '$min',
  '$max',
  '$currentDate',
  '$push',
  '$addToSet',
  '$pop',
  '$pull',
  '$pullAll',
  '$bit',
]);

/** Builds the modifier for `{<operator>: {<path>: <arg>}}`. */
export function createModifier(operator: string, path: string, arg: Leaf): Modifier {
  switch (operator) {
    case '$set':
    case '$setOnInsert':
      return setModifier(operator, arg);
    case '$unset':
      return unsetModifier;
    case '$inc':
    case '$mul':
      return arithmeticModifier(operator, path, arg);
    case '$min':
    case '$max':
      return compareModifier(operator, arg);
    case '$currentDate':
      return currentDateModifier(path, arg);
    case '$push':
      return pushModifier(arg);
    case '$addToSet':
      return addToSetModifier(arg);
    case '$pop':
      return popModifier(path, arg);
    case '$pull':
      return pullModifier(arg);
    case '$pullAll':
      return pullAllModifier(arg);
    case '$bit':
      return bitModifier(arg);
    default:
      throw new Error(`not a field operator: ${operator}`);
  }
}
