/**
 * Options: defaults, the loadLevel table, explicit overrides, the YAML file under flags, and a
 * one-line InvalidConfiguration naming the option for every bad value — never echoing a password.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadProfile, OPTIONS } from '../../src/config/options.js';
import { syncSettings } from '../../src/config/settings.js';
import { resolveOptions } from '../../src/config/resolve.js';
import { InvalidConfiguration } from '../../src/errors/errors.js';

const URIS = { cluster0: 'mongodb://u:pw0@a.example:27017/?replicaSet=rs0', cluster1: 'mongodb+srv://u:pw1@b.example.net/' };
const dir = mkdtempSync(join(tmpdir(), 'ferry-config-'));
let files = 0;
function configFile(text: string): string {
  const path = join(dir, `config-${files++}.yaml`);
  writeFileSync(path, text);
  return path;
}

function refusal(flags: Record<string, unknown>): string {
  try {
    resolveOptions(flags, {});
  } catch (error) {
    assert.ok(error instanceof InvalidConfiguration, `expected a InvalidConfiguration, got ${String(error)}`);
    assert.doesNotMatch(error.message, /\n/, 'one line');
    assert.doesNotMatch(error.message, /pw0|pw1|hunter2/, 'no password');
    return error.message;
  }
  assert.fail('expected the options to be refused');
}

describe('defaults and derived figures', () => {
  it('fills every default; loadLevel 3 sets the concurrency figures', () => {
    const options = resolveOptions(URIS);
    assert.equal(options.port, 27182);
    assert.equal(options.id, 'coordinator');
    assert.equal(options.bindAddress, '127.0.0.1');
    assert.equal(options.loadLevel, 3);
    assert.equal(options.verbosity, 'INFO');
    assert.equal(options.partitionSizeMB, OPTIONS.partitionSizeMB.default);
    assert.equal(options.disableVerification, false);
    assert.equal(options.logPath, undefined);
    assert.deepEqual(
      {
        copyWorkers: options.copyWorkers,
        batchesInFlight: options.batchesInFlight,
        applyLanes: options.applyLanes,
        batchBytes: options.batchBytes,
        verifyWorkers: options.verifyWorkers,
      },
      loadProfile(3),
    );
  });

  it('each load level pushes at least as hard as the one below', () => {
    for (const level of [2, 3, 4] as const) {
      const lower = loadProfile((level - 1) as 1 | 2 | 3);
      for (const [key, value] of Object.entries(loadProfile(level))) {
        assert.ok(value >= lower[key as keyof typeof lower], `${key} at level ${level}`);
      }
    }
    assert.deepEqual(resolveOptions({ ...URIS, loadLevel: '1' }).copyWorkers, loadProfile(1).copyWorkers);
  });

  it('explicit figures override the load level, the others still come from it', () => {
    const options = resolveOptions({ ...URIS, loadLevel: '4', copyWorkers: '3', batchBytes: '65536' });
    assert.equal(options.copyWorkers, 3);
    assert.equal(options.batchBytes, 65536);
    assert.equal(options.applyLanes, loadProfile(4).applyLanes);
    assert.equal(options.batchesInFlight, loadProfile(4).batchesInFlight);
  });

  it('knows the clusters by their first host, or the SRV name', () => {
    const options = resolveOptions(URIS);
    assert.equal(options.cluster0.address, 'a.example:27017');
    assert.equal(options.cluster1.address, 'b.example.net');
    assert.equal(options.cluster0.name, 'cluster0');
  });

  it('verbosity is case-insensitive; disableVerification is a switch', () => {
    const options = resolveOptions({ ...URIS, verbosity: 'debug', disableVerification: true });
    assert.equal(options.verbosity, 'DEBUG');
    assert.equal(options.disableVerification, true);
  });

  it('the verifier runs unless --disableVerification; its memory bound and load come from the options', () => {
    assert.equal(syncSettings(resolveOptions(URIS)).verification.enabled, true);
    assert.equal(syncSettings(resolveOptions({ ...URIS, disableVerification: true })).verification.enabled, false);
    const tuned = syncSettings(resolveOptions({ ...URIS, loadLevel: '1' }, { FERRY_VERIFY_MAX_PENDING_RECHECKS: '500' }));
    assert.equal(tuned.verification.maxPendingRechecks, 500);
    assert.equal(tuned.verification.rangesAtOnce, loadProfile(1).verifyWorkers);
    assert.throws(
      () => resolveOptions(URIS, { FERRY_VERIFY_MAX_PENDING_RECHECKS: '5' }),
      /FERRY_VERIFY_MAX_PENDING_RECHECKS must be an integer from 100/,
    );
  });
});

describe('config file', () => {
  it('supplies any option; flags win over it', () => {
    const path = configFile(
      `cluster0: "${URIS.cluster0}"\ncluster1: "${URIS.cluster1}"\nport: 28000\nid: ` +
        `shard-a\nloadLevel: 1\napplyLanes: 5\nverbosity: WARN\ndisableVerification: true\n`,
    );
    const options = resolveOptions({ config: path, port: '29000' });
    assert.equal(options.port, 29000, 'the flag wins');
    assert.equal(options.id, 'shard-a');
    assert.equal(options.loadLevel, 1);
    assert.equal(options.applyLanes, 5);
    assert.equal(options.copyWorkers, loadProfile(1).copyWorkers);
    assert.equal(options.verbosity, 'WARN');
    assert.equal(options.disableVerification, true);
    assert.equal(options.config, path);
  });

  it('an empty file is no options', () => {
    assert.equal(resolveOptions({ ...URIS, config: configFile('') }).port, 27182);
  });

  it('a missing file, bad YAML, a non-mapping, an unknown key or a bad value are refused by name', () => {
    assert.match(refusal({ ...URIS, config: join(dir, 'missing.yaml') }), /cannot read config file .*missing\.yaml: ENOENT/);
    assert.match(refusal({ ...URIS, config: configFile('port: [1,\n') }), /config file .* is not valid YAML/);
    assert.match(refusal({ ...URIS, config: configFile('- port\n- 1\n') }), /must be a mapping of option names to values/);
    assert.match(refusal({ ...URIS, config: configFile('prot: 1\n') }), /config file .*: unknown option "prot"/);
    assert.match(refusal({ ...URIS, config: configFile('config: other.yaml\n') }), /unknown option "config"/);
    assert.match(
      refusal({ ...URIS, config: configFile('port: 70000\n') }),
      /"port" in .*config-\d+\.yaml must be an integer from 0 to 65535, got 70000/,
    );
    assert.match(
      refusal({ config: configFile('cluster0: "mongodb://u:hunter2@h:1:2"\ncluster1: "mongodb://h"\n') }),
      /--cluster0 is not a valid MongoDB connection string/,
    );
  });
});

describe('bad flags are refused by name', () => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ cluster1: URIS.cluster1 }, /--cluster0 is required/],
    [{ cluster0: URIS.cluster0 }, /--cluster1 is required/],
    [{ ...URIS, cluster0: 'http://u:pw0@a.example' }, /--cluster0 is not a valid MongoDB connection string: Invalid scheme/],
    [
      { ...URIS, cluster1: 'mongodb://u:pw1@b.example/?notAnOption=1' },
      /--cluster1 is not a valid MongoDB connection string: option notanoption is not supported/,
    ],
    [{ ...URIS, cluster0: 'mongodb://u:pw0@h:99999' }, /--cluster0 is not a valid MongoDB connection string/],
    [{ ...URIS, port: 'abc' }, /--port must be an integer from 0 to 65535, got "abc"/],
    [{ ...URIS, port: '-1' }, /--port must be an integer/],
    [{ ...URIS, loadLevel: '0' }, /--loadLevel must be an integer from 1 to 4, got "0"/],
    [{ ...URIS, loadLevel: '2.5' }, /--loadLevel must be an integer/],
    [{ ...URIS, copyWorkers: '0' }, /--copyWorkers must be an integer from 1/],
    [{ ...URIS, batchBytes: '100000000' }, /--batchBytes must be an integer from 1024 to 48000000/],
    [{ ...URIS, verbosity: 'LOUD' }, /--verbosity must be one of TRACE, DEBUG, INFO, WARN, ERROR, FATAL, PANIC, got "LOUD"/],
    [{ ...URIS, id: '' }, /--id must be a non-empty string/],
  ];
  for (const [flags, message] of cases) {
    it(message.source, () => assert.match(refusal(flags), message));
  }
});
