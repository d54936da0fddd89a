/**
 * Turns flags and an optional YAML file into one checked FerryOptions: file values first, flags
 * over them, fixed defaults and loadLevel-derived figures under both. Every problem is a
 * InvalidConfiguration with a one-line message naming the option and where it came from.
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { parseClusterUri } from './clusters.js';
import { DEFAULTS, LOAD_LEVELS, type FerryOptions, type LoadLevel, type LoadProfile } from './options.js';
import { VERBOSITY_LEVELS, type Verbosity } from '../domain/constants.js';
import { InvalidConfiguration } from '../errors/errors.js';

/** Option values as given: strings from flags, YAML scalars from the file. */
export type RawOptions = Record<string, unknown>;

type Check = (value: unknown, where: string) => unknown;

function text(value: unknown, where: string): string {
  if (typeof value !== 'string' || value.length === 0) {
    throw new InvalidConfiguration(`${where} must be a non-empty string`);
  }
  return value;
}

function integer(min: number, max: number): Check {
  return (value, where) => {
    const number = typeof value === 'string' && /^\s*-?\d+\s*$/.test(value) ? Number(value) : value;
    if (typeof number !== 'number' || !Number.isInteger(number) || number < min || number > max) {
      throw new InvalidConfiguration(`${where} must be an integer from ${min} to ${max}, got ${JSON.stringify(value)}`);
    }
    return number;
  };
}

function flag(value: unknown, where: string): boolean {
  if (value === true || value === 'true') return true;
  if (value === false || value === 'false') return false;
  throw new InvalidConfiguration(`${where} must be true or false, got ${JSON.stringify(value)}`);
}

function verbosity(value: unknown, where: string): Verbosity {
  const level = typeof value === 'string' ? value.toUpperCase() : value;
  if (!VERBOSITY_LEVELS.includes(level as Verbosity)) {
    throw new InvalidConfiguration(`${where} must be one of ${VERBOSITY_LEVELS.join(', ')}, got ${JSON.stringify(value)}`);
  }
  return level as Verbosity;
}

/** The keys a config file may hold (the same names as the flags) and how each is checked. */
const CHECKS: Record<string, Check> = {
  cluster0: text,
  cluster1: text,
  port: integer(0, 65535),
  id: text,
  bindAddress: text,
  loadLevel: integer(1, 4),
  copyWorkers: integer(1, 256),
  batchesInFlight: integer(1, 64),
  applyLanes: integer(1, 1024),
  // 48 MB is mongod's maxMessageSizeBytes: no single write can be larger.
  batchBytes: integer(1024, 48_000_000),
  partitionSizeMB: integer(1, 1_048_576),
  logPath: text,
  verbosity,
  disableVerification: flag,
};

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
    if (!(key in CHECKS)) throw new InvalidConfiguration(`config file ${path}: unknown option "${key}"`);
  }
  return parsed as RawOptions;
}

/** Checks one source of options, naming each value's origin in errors. */
function checkAll(raw: RawOptions, describe: (key: string) => string): RawOptions {
  const checked: RawOptions = {};
  for (const [key, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    const check = CHECKS[key];
    if (check === undefined) throw new InvalidConfiguration(`unknown option ${describe(key)}`);
    checked[key] = check(value, describe(key));
  }
  return checked;
}

/**
 * Merges flags over the file given by `flags.config` (if any) over the defaults, and checks
 * everything, including both connection strings.
 */
export function resolveOptions(flags: RawOptions): FerryOptions {
  const { config, ...flagValues } = flags;
  const configPath = config === undefined ? undefined : text(config, '--config');
  const fromFile = configPath === undefined ? {} : readConfigFile(configPath);
  const merged = {
    ...checkAll(fromFile, (key) => `"${key}" in ${configPath}`),
    ...checkAll(flagValues, (key) => `--${key}`),
  };

  for (const name of ['cluster0', 'cluster1'] as const) {
    if (merged[name] === undefined) {
      throw new InvalidConfiguration(`--${name} is required (a MongoDB connection string, by flag or in --config)`);
    }
  }
  const loadLevel = (merged.loadLevel ?? DEFAULTS.loadLevel) as LoadLevel;
  const profile: LoadProfile = { ...LOAD_LEVELS[loadLevel] };
  for (const key of Object.keys(profile) as (keyof LoadProfile)[]) {
    if (merged[key] !== undefined) profile[key] = merged[key] as number;
  }
  return {
    ...DEFAULTS,
    ...(merged as Partial<FerryOptions>),
    ...profile,
    loadLevel,
    config: configPath,
    cluster0: parseClusterUri('cluster0', merged.cluster0 as string),
    cluster1: parseClusterUri('cluster1', merged.cluster1 as string),
  };
}
