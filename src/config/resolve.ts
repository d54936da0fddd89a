/**
 * Turns flags, an optional YAML file and the environment into one checked FerryOptions, by the
 * option table (options.ts): flags over file values over `FERRY_*` variables over the load
 * level's column over the defaults. Every problem is InvalidConfiguration with a one-line message
 * naming the option and where it came from.
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { InvalidConfiguration } from '../errors/errors.js';
import { parseClusterUri } from './clusters.js';
import { checkHotDocuments } from './hot-documents.js';
import {
  ENV_OPTIONS,
  FLAG_OPTIONS,
  loadProfile,
  OPTIONS,
  OPTION_NAMES,
  type FerryOptions,
  type LoadLevel,
  type OptionName,
  type OptionSpec,
} from './options.js';

/** Option values as given: strings from flags and the environment, YAML scalars from the file. */
export type RawOptions = Record<string, unknown>;

function checkInteger(spec: Extract<OptionSpec, { type: 'integer' }>, value: unknown, where: string): number {
  const number = typeof value === 'string' && /^\s*-?\d+\s*$/.test(value) ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isInteger(number) || number < spec.min || number > spec.max) {
    const unit = spec.unit === undefined || spec.unit === 'bytes' ? '' : ` (${spec.unit})`;
    throw new InvalidConfiguration(`${where} must be an integer from ${spec.min} to ${spec.max}${unit}, got ${JSON.stringify(value)}`);
  }
  return number;
}

/** One JSON object, given as a JSON string (a flag) or as a YAML mapping. */
function jsonObject(value: unknown, where: string): Record<string, unknown> {
  let parsed = value;
  if (typeof value === 'string') {
    try {
      parsed = JSON.parse(value);
    } catch (error) {
      throw new InvalidConfiguration(`${where} is not valid JSON: ${(error as Error).message}`);
    }
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new InvalidConfiguration(`${where} must be a JSON object, got ${JSON.stringify(value)}`);
  }
  return parsed as Record<string, unknown>;
}

/** One value checked against its option's type and range. */
function checkValue(name: OptionName, value: unknown, where: string): unknown {
  const spec: OptionSpec = OPTIONS[name];
  switch (spec.type) {
    case 'integer':
      return checkInteger(spec, value, where);
    case 'switch':
      if (value === true || value === 'true') return true;
      if (value === false || value === 'false') return false;
      throw new InvalidConfiguration(`${where} must be true or false, got ${JSON.stringify(value)}`);
    case 'choice': {
      const given = typeof value === 'string' && spec.anyCase === true ? value.toUpperCase() : value;
      if (!spec.choices.includes(given as string)) {
        throw new InvalidConfiguration(`${where} must be one of ${spec.choices.join(', ')}, got ${JSON.stringify(value)}`);
      }
      return given;
    }
    case 'jsonList': {
      const items = Array.isArray(value) ? value : [value];
      return items.map((item, index) => jsonObject(item, items.length > 1 ? `${where}[${index}]` : where));
    }
    case 'text':
    case 'cluster':
      if (typeof value !== 'string' || value.length === 0) throw new InvalidConfiguration(`${where} must be a non-empty string`);
      return value;
  }
}

/** Reads the `--config` YAML file: a mapping of option names to values. */
export function readConfigFile(path: string): RawOptions {
  let source: string;
  try {
    source = readFileSync(path, 'utf8');
  } catch (error) {
    throw new InvalidConfiguration(`cannot read config file ${path}: ${(error as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = parseYaml(source);
  } catch (error) {
    const firstLine = (error as Error).message.split('\n')[0];
    throw new InvalidConfiguration(`config file ${path} is not valid YAML: ${firstLine}`);
  }
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new InvalidConfiguration(`config file ${path} must be a mapping of option names to values`);
  }
  for (const key of Object.keys(parsed)) {
    if (!(FLAG_OPTIONS as string[]).includes(key) || key === 'config')
      throw new InvalidConfiguration(`config file ${path}: unknown option "${key}"`);
  }
  return parsed as RawOptions;
}

/** Checks one source of options, naming each value's origin in errors. */
function checkAll(raw: RawOptions, describe: (key: string) => string): RawOptions {
  const checked: RawOptions = {};
  for (const [key, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    if (!(FLAG_OPTIONS as string[]).includes(key)) throw new InvalidConfiguration(`unknown option ${describe(key)}`);
    checked[key] = checkValue(key as OptionName, value, describe(key));
  }
  return checked;
}

/** The options set by `FERRY_*` variables in `env`, checked. */
function fromEnvironment(env: NodeJS.ProcessEnv): RawOptions {
  const checked: RawOptions = {};
  for (const name of ENV_OPTIONS) {
    const variable = (OPTIONS[name] as OptionSpec).env!;
    const value = env[variable];
    if (value === undefined || value === '') continue;
    checked[name] = checkValue(name, value, variable);
  }
  return checked;
}

/** `FERRY_*` variables in `env` that no option reads (a misspelt knob, most likely). */
export function unknownEnvironmentVariables(env: NodeJS.ProcessEnv): string[] {
  const known = new Set(ENV_OPTIONS.map((name) => (OPTIONS[name] as OptionSpec).env));
  return Object.keys(env).filter((name) => name.startsWith('FERRY_') && !known.has(name as `FERRY_${string}`));
}

/**
 * Merges flags over the file given by `flags.config` (if any) over the environment over the
 * defaults, and checks everything, including both connection strings.
 */
export function resolveOptions(flags: RawOptions, env: NodeJS.ProcessEnv = process.env): FerryOptions {
  const { config, ...flagValues } = flags;
  const configPath = config === undefined ? undefined : (checkValue('config', config, '--config') as string);
  const fromFile = configPath === undefined ? {} : readConfigFile(configPath);
  const given: RawOptions = {
    ...fromEnvironment(env),
    ...checkAll(fromFile, (key) => `"${key}" in ${configPath}`),
    ...checkAll(flagValues, (key) => `--${key}`),
  };
  const loadLevel = (given.loadLevel ?? OPTIONS.loadLevel.default) as LoadLevel;
  const resolved: RawOptions = { ...loadProfile(loadLevel) };
  for (const name of OPTION_NAMES) {
    const spec: OptionSpec = OPTIONS[name];
    if (given[name] !== undefined) resolved[name] = given[name];
    else if ('default' in spec && spec.default !== undefined) resolved[name] = spec.default;
    else if (spec.required === true) {
      throw new InvalidConfiguration(
        `--${name} is required (a MongoDB connection string: in --config, in ${(spec as OptionSpec).env ?? 'the environment'}, or by flag)`,
      );
    }
  }
  resolved.config = configPath;
  resolved.cluster0 = parseClusterUri('cluster0', resolved.cluster0 as string);
  resolved.cluster1 = parseClusterUri('cluster1', resolved.cluster1 as string);
  if (resolved.hotDocIDs !== undefined) checkHotDocuments(resolved.hotDocIDs as Record<string, unknown>[], 'hotDocIDs');
  return resolved as FerryOptions;
}
