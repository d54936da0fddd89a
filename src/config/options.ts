/**
 * The option table: every option of Ferry declared once, with its type, range, default (or its
 * column in the load-level table), help text, and where it is set: a flag of the same name
 * (`--loadLevel 2`) and the same key in the YAML file given with `--config`, and/or a `FERRY_*`
 * environment variable for tuning knobs operators rarely need. The CLI's flags (src/cli/flags.ts),
 * the checks of flags, file and environment (resolve.ts), the defaults and the README's option
 * tables (scripts/readme-tables.ts; test/unit/readme-tables.test.ts fails when they drift) are all
 * derived from it. What each phase then gets from the options is settings.ts.
 *
 * Where a value comes from, most to least binding: flag, config file, environment variable, the
 * load level's column, the default. Every option is read and checked at startup; a bad value is
 * InvalidConfiguration (exit code 2) before anything is touched.
 *
 * `live: true` marks an option that may change while Ferry runs: on SIGHUP Ferry reads the config
 * file again (src/config/reload.ts) and hands the new figures to the running phases, which apply
 * them at their next partition or batch. Every other option keeps the value it started with.
 */
import { DEFAULT_INSTANCE_ID, type ClusterEndpoint } from '../domain/clusters.js';
import { VERBOSITY_LEVELS } from '../domain/constants.js';

const MiB = 1024 * 1024;

interface OptionBase {
  /** One line for `ferry --help`. */
  readonly help: string;
  /** The README's meaning column, when it says more than `help`. */
  readonly meaning?: string;
  /** The README's default column, when it is not the default value itself. */
  readonly defaultText?: string;
  /** `--name <valueName>` in help and the README. */
  readonly valueName?: string;
  /** False: not a flag nor a config-file key, only its environment variable. Default true. */
  readonly flag?: false;
  /** The environment variable that sets it. */
  readonly env?: `FERRY_${string}`;
  /** May change while Ferry runs (see the module comment). */
  readonly live?: true;
  /** Must be given. */
  readonly required?: true;
}

export interface IntegerOption extends OptionBase {
  readonly type: 'integer';
  readonly min: number;
  readonly max: number;
  /** What the number counts (`milliseconds`, `bytes`...), for messages and the README. */
  readonly unit?: string;
  readonly default?: number;
  /** The value at load levels 1, 2, 3 and 4 when not given (see `loadLevel`). */
  readonly loadLevel?: readonly [number, number, number, number];
}

export interface ChoiceOption extends OptionBase {
  readonly type: 'choice';
  readonly choices: readonly string[];
  /** Accepted in any case, kept as `choices` spells it. */
  readonly anyCase?: true;
  readonly default?: string;
}

export interface TextOption extends OptionBase {
  readonly type: 'text';
  readonly default?: string;
}

export interface SwitchOption extends OptionBase {
  readonly type: 'switch';
  readonly default: boolean;
}

/**
 * A list of JSON objects: a flag given once per object (`--hotDocIDs '{...}' --hotDocIDs '{...}'`),
 * a YAML list in the config file (of mappings, or of JSON strings). What the objects hold is
 * checked by the option's consumer (settings.ts).
 */
export interface JsonListOption extends OptionBase {
  readonly type: 'jsonList';
}

/** A connection string, checked by the driver's parser and kept with its first host. */
export interface ClusterOption extends OptionBase {
  readonly type: 'cluster';
}

export type OptionSpec = IntegerOption | ChoiceOption | TextOption | SwitchOption | JsonListOption | ClusterOption;

/** What `--loadLevel` names at each level (the README's load-level table). */
export const LOAD_LEVEL_NAMES: Readonly<Record<number, string>> = Object.freeze({ 1: 'busy production source', 4: 'migration window' });

/**
 * Every option. Load levels: level 3 suits a cluster that also serves its application; 4 is for
 * a migration window; 1 for a busy production source. Batches of a few MiB already hold thousands
 * of documents, so a bigger one saves the clusters little, while each batch in flight costs Ferry
 * that much memory several times over (its own buffer, the driver's copies of the message, the read
 * reply): bench/RESULTS.md measured 2 MiB batches copying as fast as 8 MiB ones with a third less memory.
 */
export const OPTIONS = {
  // Connection strings hold passwords: a flag shows them to every local user (ps, /proc/<pid>/cmdline)
  // until Ferry scrubs its command line, so the file (--config) and the environment are preferred.
  cluster0: {
    type: 'cluster',
    required: true,
    env: 'FERRY_CLUSTER0',
    valueName: '<uri>',
    help: 'connection string of the first cluster (required; with a password, prefer --config or FERRY_CLUSTER0)',
    meaning: 'first cluster; start requests call it `cluster0` (a password here is visible in `ps`: see [Passwords](#passwords))',
  },
  cluster1: {
    type: 'cluster',
    required: true,
    env: 'FERRY_CLUSTER1',
    valueName: '<uri>',
    help: 'connection string of the second cluster (required; with a password, prefer --config or FERRY_CLUSTER1)',
    meaning: 'second cluster; start requests call it `cluster1` (a password here is visible in `ps`: see [Passwords](#passwords))',
  },
  config: {
    type: 'text',
    valueName: '<file>',
    defaultText: 'none',
    help: 'YAML file with any of these options (flags win)',
    meaning: 'YAML file with any of these options (same names); flags win over it',
  },
  port: {
    type: 'integer',
    min: 0,
    max: 65535,
    default: 27182,
    valueName: '<port>',
    help: 'control API port',
    meaning: 'control API port (0 = any free port, reported in the log)',
  },
  id: {
    type: 'text',
    default: DEFAULT_INSTANCE_ID,
    valueName: '<id>',
    help: 'instance identifier',
    meaning: 'instance id: `mongosyncID`/`coordinatorID` in progress, `mongosyncID` in every log line',
  },
  bindAddress: {
    type: 'text',
    default: '127.0.0.1',
    valueName: '<addr>',
    help: 'interface the API listens on',
    meaning: 'interface the API listens on; anything but loopback logs a warning (the API has no authentication)',
  },
  loadLevel: {
    live: true,
    type: 'integer',
    min: 1,
    max: 4,
    default: 3,
    valueName: '<1-4>',
    help: 'how hard to push the clusters',
    meaning: 'how hard Ferry pushes the clusters; sets the next five (table below). Live: SIGHUP re-reads it from `--config`',
  },
  copyWorkers: {
    live: true,
    type: 'integer',
    min: 1,
    max: 256,
    loadLevel: [1, 2, 4, 8],
    valueName: '<n>',
    help: 'partitions copied at once',
    meaning: 'partitions copied at once (in at most one worker thread per CPU core but one)',
  },
  batchesInFlight: {
    live: true,
    type: 'integer',
    min: 1,
    max: 64,
    loadLevel: [1, 2, 2, 4],
    valueName: '<n>',
    help: 'read batches in flight per copy worker',
    meaning: 'read batches each copy worker keeps in flight',
  },
  applyLanes: {
    live: true,
    type: 'integer',
    min: 1,
    max: 1024,
    loadLevel: [2, 4, 8, 16],
    valueName: '<n>',
    help: 'parallel change-event lanes',
    meaning: 'parallel change-event lanes (per-document order is kept within a lane)',
  },
  batchBytes: {
    live: true,
    type: 'integer',
    // 48 MB is mongod's maxMessageSizeBytes: no single write can be larger.
    min: 1024,
    max: 48_000_000,
    unit: 'bytes',
    loadLevel: [1 * MiB, 2 * MiB, 2 * MiB, 4 * MiB],
    valueName: '<bytes>',
    help: 'largest write batch in bytes',
    meaning: 'largest write batch (1024 – 48,000,000)',
  },
  verifyWorkers: {
    type: 'integer',
    min: 1,
    max: 256,
    loadLevel: [1, 1, 2, 4],
    valueName: '<n>',
    help: '`_id` ranges the verifier compares at once',
    meaning: '`_id` ranges the embedded verifier compares at once (each read from both clusters)',
  },
  partitionSizeMB: {
    type: 'integer',
    min: 1,
    max: 1_048_576,
    default: 64,
    valueName: '<MiB>',
    help: 'copy partition size',
    meaning: 'target size of one `_id`-range copy partition',
  },
  logPath: {
    type: 'text',
    valueName: '<dir>',
    defaultText: 'stdout',
    help: 'write logs to <dir>/ferry.log instead of stdout',
    meaning: 'write logs to `<dir>/ferry.log` (created if missing)',
  },
  verbosity: {
    live: true,
    type: 'choice',
    choices: VERBOSITY_LEVELS,
    anyCase: true,
    default: 'INFO',
    valueName: '<level>',
    help: VERBOSITY_LEVELS.join(', '),
    meaning: 'TRACE, DEBUG, INFO, WARN, ERROR, FATAL or PANIC (any case)',
  },
  disableVerification: {
    type: 'switch',
    default: false,
    defaultText: 'off',
    help: 'turn the embedded verifier off (as the start option verification: {enabled: false})',
    meaning: 'turns the embedded verifier off for every sync (as the start option `verification: {enabled: false}` does for one)',
  },
  acceptDisclaimer: {
    type: 'switch',
    default: false,
    defaultText: 'off',
    help: "accepted for mongosync's scripts: Ferry shows no disclaimer to accept",
    meaning:
      "mongosync's: accept the embedded verifier's disclaimers without a prompt. Ferry never prompts, so it starts " +
      'the same with or without it',
  },
  disableTelemetry: {
    type: 'switch',
    default: false,
    defaultText: 'off',
    help: "accepted for mongosync's scripts: Ferry sends no telemetry",
    meaning:
      "mongosync's: send no usage data to MongoDB. Ferry never sends any (it talks only to the two clusters), " +
      'so there is nothing to turn off',
  },
  disableMetricsLogging: {
    type: 'switch',
    default: false,
    defaultText: 'off',
    help: 'no periodic "Operation duration stats." lines in the log',
    meaning:
      'turns off metrics logging: the periodic `Operation duration stats.` log line (read and write latencies, ' +
      'ping latency; mongosync writes its metrics to files of their own, Ferry to its log). `/metrics` still serves them',
  },
  hotDocIDs: {
    type: 'jsonList',
    valueName: '<json>',
    defaultText: 'none',
    help: 'documents updated very often, copied at commit instead of on every change (repeatable)',
    meaning:
      'mongosync\'s: `{"db": …, "collection": …, "ids": [{"_id": <canonical extended JSON>}, …]}`, once per collection ' +
      '(repeat the flag; a YAML list in `--config`). Their change events are not applied one by one: commit copies ' +
      'them from the source after the commit point. Recorded on the destination: a restart adds to them, never removes',
  },
  copyCheckpointIntervalMs: {
    type: 'integer',
    flag: false,
    env: 'FERRY_CHECKPOINT_INTERVAL_MS',
    min: 0,
    max: 3_600_000,
    unit: 'milliseconds',
    default: 1000,
    help: 'least time between two checkpoints of a partition (less re-copied after a crash, more small metadata writes)',
  },
  copyWritePath: {
    type: 'choice',
    flag: false,
    env: 'FERRY_COPY_WRITE_PATH',
    choices: ['raw', 'wire', 'decode'],
    defaultText: 'wire where it serves, else raw',
    help:
      "default `wire` where Ferry's own connections serve the destination (a replica set with SCRAM or no " +
      'authentication, TLS with CA and client-certificate files), else `raw` (bench/RESULTS.md, "Copy: the wire read ' +
      'path"). `wire` sends each batch on those connections to the primary, framed once and written with vectored ' +
      'I/O; `raw` through the driver, the documents as they were read; `decode` deserializes and re-encodes each ' +
      'document through `insertMany` (slower; loses BSON with no JavaScript value), and `raw` falls back to it ' +
      'if the installed driver lacks the class it relies on. A path set here and not available is warned about',
  },
  copyReadPath: {
    type: 'choice',
    flag: false,
    env: 'FERRY_COPY_READ_PATH',
    choices: ['driver', 'wire'],
    defaultText: 'wire where it serves, else driver',
    help:
      "default `wire` where Ferry's own connections serve the source (as for `FERRY_COPY_WRITE_PATH`), else " +
      "`driver`. `wire` reads each partition on Ferry's own connections to the source's primary, each reply " +
      'received into a reused buffer; with the `wire` write path its documents are written from that buffer, not ' +
      'copied. The embedded verifier reads its ranges of each cluster the same way. `driver` reads through the driver',
  },
  workerHeapMB: {
    type: 'integer',
    flag: false,
    env: 'FERRY_WORKER_HEAP_MB',
    min: 0,
    max: 65_536,
    unit: 'megabytes',
    default: 64,
    help:
      "floor of each worker thread's V8 old generation (0: V8's default): higher spends less CPU on garbage collection " +
      'and more memory (src/copy/worker-heap.ts)',
  },
  ceaCheckpointIntervalMs: {
    type: 'integer',
    flag: false,
    env: 'FERRY_CEA_CHECKPOINT_INTERVAL_MS',
    min: 0,
    max: 3_600_000,
    unit: 'milliseconds',
    default: 1000,
    help:
      'least time between two records of the change-stream resume token (fewer events applied again after a crash, ' +
      'more small metadata writes)',
  },
  verifyMaxPendingRechecks: {
    type: 'integer',
    flag: false,
    env: 'FERRY_VERIFY_MAX_PENDING_RECHECKS',
    min: 100,
    max: 10_000_000,
    default: 20_000,
    help:
      'documents the verifier keeps in memory waiting to be checked again (about 300 bytes each); more wait in the ' + 'metadata database',
  },
  verifyRetryIntervalMs: {
    type: 'integer',
    flag: false,
    env: 'FERRY_VERIFY_RETRY_INTERVAL_MS',
    min: 1,
    max: 3_600_000,
    unit: 'milliseconds',
    default: 10_000,
    help: 'how long verification stopped on an error waits before it continues from its records',
  },
  commitRetryIntervalMs: {
    type: 'integer',
    flag: false,
    env: 'FERRY_COMMIT_RETRY_INTERVAL_MS',
    min: 1,
    max: 3_600_000,
    unit: 'milliseconds',
    default: 10_000,
    help:
      'how often a commit waiting on a refused restore, or a reverse on a refused temporary change ' +
      '(or either on an unreachable cluster), tries again',
  },
  oplogCheckIntervalMs: {
    type: 'integer',
    flag: false,
    env: 'FERRY_OPLOG_CHECK_INTERVAL_MS',
    min: 100,
    max: 86_400_000,
    unit: 'milliseconds',
    default: 300_000,
    help: "how often the source's oplog window is read for `estimatedOplogTimeRemaining` (mongosync: every 5 minutes)",
  },
  progressLogIntervalMs: {
    type: 'integer',
    flag: false,
    env: 'FERRY_PROGRESS_LOG_INTERVAL_MS',
    min: 100,
    max: 86_400_000,
    unit: 'milliseconds',
    default: 30_000,
    help: 'how often the `Replication progress.` and `Operation duration stats.` log lines are written while a sync runs',
  },
  laneStallSeconds: {
    type: 'integer',
    flag: false,
    env: 'FERRY_LANE_STALL_SECONDS',
    min: 1,
    max: 86_400,
    unit: 'seconds',
    default: 60,
    help: 'a change-event lane whose batch is in flight this long is reported in `warnings` (the destination is slow or blocked)',
  },
  randomIdMinBytes: {
    type: 'integer',
    flag: false,
    env: 'FERRY_RANDOM_ID_MIN_BYTES',
    min: 0,
    max: Number.MAX_SAFE_INTEGER,
    unit: 'bytes',
    default: 20 * 1024 ** 3,
    help: "with `detectRandomId`, collections at least this large are checked for random `_id`s (mongosync's threshold: 20 GiB)",
  },
  stopTimeoutMs: {
    type: 'integer',
    flag: false,
    env: 'FERRY_STOP_TIMEOUT_MS',
    min: 100,
    max: 600_000,
    unit: 'milliseconds',
    default: 15_000,
    help:
      'longest wait, after SIGINT/SIGTERM, for the sync to stop at a safe point; past it Ferry exits (code 1) and a restart ' +
      'redoes the work that was in flight from its metadata (a cluster that does not answer cannot delay a stop longer)',
  },
  leaseDurationMs: {
    type: 'integer',
    flag: false,
    env: 'FERRY_LEASE_DURATION_MS',
    min: 1000,
    max: 600_000,
    unit: 'milliseconds',
    default: 20_000,
    help:
      "how long a sync's lease lasts without renewal (renewed every quarter of it): the longest a restarted Ferry on " +
      'another machine waits to take over from one that died',
  },
  guardIntervalMs: {
    type: 'integer',
    flag: false,
    env: 'FERRY_GUARD_INTERVAL_MS',
    min: 100,
    max: 3_600_000,
    unit: 'milliseconds',
    default: 5000,
    help:
      'how often Ferry checks that nothing else changed what it owns on the destination (also checked at each phase ' +
      'and before commit completes)',
  },
  healthIntervalMs: {
    type: 'integer',
    flag: false,
    env: 'FERRY_HEALTH_INTERVAL_MS',
    min: 100,
    max: 60_000,
    unit: 'milliseconds',
    default: 2000,
    help:
      "how often each cluster is pinged (progress's `pingLatencyMs` is the last round trip); one that does not answer " +
      'within 2.5 times this (at least 1 s) is reported unreachable',
  },
} as const satisfies Record<string, OptionSpec>;

export type OptionName = keyof typeof OPTIONS;

export const OPTION_NAMES = Object.keys(OPTIONS) as OptionName[];

type ValueOf<S> = S extends { type: 'integer' }
  ? number
  : S extends { type: 'jsonList' }
    ? Record<string, unknown>[]
    : S extends { type: 'switch' }
      ? boolean
      : S extends { type: 'cluster' }
        ? ClusterEndpoint
        : S extends { type: 'choice'; choices: readonly (infer C)[] }
          ? C
          : string;

type Always<S> = S extends { default: unknown } | { loadLevel: unknown } | { required: true } ? true : false;

/** Every option's value, once resolved: those without a default (`config`, `logPath`) may be absent. */
export type FerryOptions = {
  -readonly [K in OptionName as Always<(typeof OPTIONS)[K]> extends true ? K : never]: ValueOf<(typeof OPTIONS)[K]>;
} & {
  -readonly [K in OptionName as Always<(typeof OPTIONS)[K]> extends true ? never : K]?: ValueOf<(typeof OPTIONS)[K]>;
};

export type LoadLevel = 1 | 2 | 3 | 4;

/** The options `--loadLevel` sets unless given. */
export const LOAD_LEVEL_OPTIONS = OPTION_NAMES.filter((name) => 'loadLevel' in OPTIONS[name]) as (
  'copyWorkers' | 'batchesInFlight' | 'applyLanes' | 'batchBytes' | 'verifyWorkers'
)[];

export type LoadProfile = Pick<FerryOptions, (typeof LOAD_LEVEL_OPTIONS)[number]>;

/** What each load level sets. */
export function loadProfile(level: LoadLevel): LoadProfile {
  const profile = {} as LoadProfile;
  for (const name of LOAD_LEVEL_OPTIONS) profile[name] = OPTIONS[name].loadLevel[level - 1];
  return profile;
}

/** The options set by a flag and a config-file key. */
export const FLAG_OPTIONS = OPTION_NAMES.filter((name) => (OPTIONS[name] as OptionSpec).flag !== false);

/** The options a SIGHUP may change while Ferry runs. */
export const LIVE_OPTIONS = OPTION_NAMES.filter((name) => (OPTIONS[name] as OptionSpec).live === true);

/** The options set by an environment variable. */
export const ENV_OPTIONS = OPTION_NAMES.filter((name) => (OPTIONS[name] as OptionSpec).env !== undefined);
