/**
 * The smaller defects a black-box fault campaign found, each as a class: names of object members
 * as option names; a `--logPath` Node's recursive mkdir loops on; replies of the HTTP layer itself
 * (431, malformed requests) in the API's own shape; wrong credentials named at startup; loopback
 * addresses beyond 127.0.0.1; and connection-string passwords on Ferry's command line (`ps`).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { connect as connectSocket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { holdsSecret, withoutSecrets } from '../../src/cli/command-line.js';
import { isLoopbackAddress } from '../../src/domain/constants.js';
import { spawnCluster, type ClusterProcess } from '../cluster/index.js';
import { startFerry, type FerryProcess } from '../e2e/ferry-process.js';

const MAIN = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));
// Nothing connects to these until a start request (recovery at startup gives up on them, and starts IDLE).
const URI0 = 'mongodb://127.0.0.1:9/?replicaSet=rs0&serverSelectionTimeoutMS=500';
const URI1 = 'mongodb://127.0.0.1:10/?replicaSet=rs0&serverSelectionTimeoutMS=500';

function runToExit(args: string[], env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, [MAIN, ...args], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 20_000 });
  return { code: result.status, stderr: result.stderr, signal: result.signal };
}

/** Sends raw bytes to the API and reads the whole answer. */
function rawRequest(base: string, bytes: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connectSocket(Number(port), hostname, () => socket.end(bytes));
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head = '', body = ''] = answer.split('\r\n\r\n');
      resolve({ status: Number(head.split(' ')[1]), body: JSON.parse(body) as Record<string, unknown> });
    });
  });
}

describe('options named after object members', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-hardening-'));
  for (const name of ['__proto__', 'hasOwnProperty', 'toString', 'constructor']) {
    it(`"${name}" in the config file, or as a flag, is an unknown option (exit 2)`, () => {
      const file = join(dir, `${name}.yaml`);
      writeFileSync(file, `cluster0: "${URI0}"\ncluster1: "${URI1}"\n${name}: 1\n`);
      const fromFile = runToExit(['--config', file]);
      assert.equal(fromFile.code, 2, fromFile.stderr);
      assert.match(fromFile.stderr, new RegExp(`^ferry: error: config file .* unknown option "${name}"\\n$`));
      const fromFlag = runToExit(['--cluster0', URI0, '--cluster1', URI1, `--${name}`, '1']);
      assert.equal(fromFlag.code, 2, fromFlag.stderr);
      assert.match(fromFlag.stderr, /unknown option/);
    });
  }
});

describe('--logPath', () => {
  it('a directory that cannot be created under /proc is refused at once (exit 2), not spun on', () => {
    const result = runToExit(['--cluster0', URI0, '--cluster1', URI1, '--logPath', '/proc/ferry-no-such-dir']);
    assert.equal(result.signal, null, 'it exited by itself');
    assert.equal(result.code, 2);
    assert.match(result.stderr, /^ferry: error: --logPath \/proc\/ferry-no-such-dir cannot be used: ENOENT/);
  });
});

describe('loopback addresses', () => {
  it('every 127.0.0.0/8 address, ::1, IPv4-mapped loopback and localhost are loopback; nothing else', () => {
    for (const address of ['127.0.0.1', '127.0.0.2', '127.255.255.254', '::1', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.2', 'localhost']) {
      assert.equal(isLoopbackAddress(address), true, address);
    }
    for (const address of ['0.0.0.0', '10.0.0.1', '128.0.0.1', '::', '::ffff:10.0.0.1', 'example.com']) {
      assert.equal(isLoopbackAddress(address), false, address);
    }
  });

  it('--bindAddress 127.0.0.2 listens there without warning that the API is exposed', async () => {
    const ferry = await startFerry(['--cluster0', URI0, '--cluster1', URI1, '--bindAddress', '127.0.0.2']);
    try {
      assert.ok(ferry.log().some((line) => line.host === '127.0.0.2' && String(line.message).startsWith('Control API listening')));
      assert.ok(!ferry.log().some((line) => /no authentication/.test(String(line.message))));
    } finally {
      assert.equal(await ferry.stop(), 0);
    }
  });
});

describe("the HTTP layer's own refusals", () => {
  let ferry: FerryProcess;
  before(async () => {
    ferry = await startFerry(['--cluster0', URI0, '--cluster1', URI1]);
  });
  after(async () => {
    await ferry?.stop();
  });

  it('headers too large → 431 RequestHeadersTooLarge in the API shape', async () => {
    const answer = await rawRequest(ferry.base, `GET /api/v1/progress HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    assert.equal(answer.status, 431);
    assert.deepEqual(Object.keys(answer.body).sort(), ['error', 'errorDescription', 'success']);
    assert.equal(answer.body.success, false);
    assert.equal(answer.body.error, 'RequestHeadersTooLarge');
  });

  it('a request that is not HTTP → 400 InvalidRequest in the API shape', async () => {
    const answer = await rawRequest(ferry.base, 'NOT HTTP AT ALL\r\n\r\n');
    assert.equal(answer.status, 400);
    assert.equal(answer.body.success, false);
    assert.equal(answer.body.error, 'InvalidRequest');
    assert.match(String(answer.body.errorDescription), /not valid HTTP/);
  });

  it('a body with a __proto__ key is refused for what it is, not as invalid JSON', async () => {
    const raw = await fetch(`${ferry.base}/api/v1/start`, { method: 'POST', body: '{"__proto__": {"x": 1}}' });
    const body = (await raw.json()) as Record<string, unknown>;
    assert.equal(raw.status, 400);
    assert.equal(body.error, 'InvalidRequest');
    assert.match(String(body.errorDescription), /__proto__/);
  });
});

describe('credentials', { skip: process.env.FERRY_TEST_CLUSTER0_URI ? 'needs a local test cluster with users' : false }, () => {
  let node: ClusterProcess;
  let open: ClusterProcess;
  const withPassword = (password: string) => node.uri.replace('mongodb://', `mongodb://root:${password}@`);

  before(async () => {
    [node, open] = await Promise.all([
      spawnCluster({ users: [{ user: 'root', password: 'pw-right-one', roles: ['root'] }] }),
      spawnCluster(),
    ]);
  });
  after(async () => {
    await Promise.allSettled([node?.stop(), open?.stop()]);
  });

  it('wrong credentials at startup are named AuthenticationFailed (exit 1), without the password', () => {
    const result = runToExit(['--cluster0', withPassword('pw-wrong-one'), '--cluster1', open.uri, '--port', '0']);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^ferry: error: AuthenticationFailed: cluster0 \(127\.0\.0\.1:\d+\) refused Ferry's credentials/);
    assert.doesNotMatch(result.stderr, /pw-wrong-one/);
  });

  it('a password given as a flag is gone from /proc/<pid>/cmdline once Ferry runs; the log says how to avoid it', async () => {
    const ferry = await startFerry(['--cluster0', withPassword('pw-right-one'), '--cluster1', open.uri]);
    try {
      const cmdline = readFileSync(`/proc/${ferry.child.pid}/cmdline`, 'utf8');
      assert.doesNotMatch(cmdline, /pw-right-one/);
      assert.match(cmdline, /^ferry .*--cluster0 mongodb:\/\/\*\*\*@127\.0\.0\.1/);
      assert.ok(ferry.log().some((line) => line.level === 'warn' && /FERRY_CLUSTER0/.test(String(line.message))));
      assert.equal((await ferry.progress()).state, 'IDLE', 'it reached the cluster with the password all the same');
    } finally {
      assert.equal(await ferry.stop(), 0);
    }
  });

  it('FERRY_CLUSTER0 / FERRY_CLUSTER1 keep connection strings off the command line altogether', async () => {
    const ferry = await startFerry([], { FERRY_CLUSTER0: withPassword('pw-right-one'), FERRY_CLUSTER1: open.uri });
    try {
      assert.doesNotMatch(readFileSync(`/proc/${ferry.child.pid}/cmdline`, 'utf8'), /mongodb:|pw-right-one/);
      assert.ok(!ferry.log().some((line) => line.level === 'warn' && /FERRY_CLUSTER0/.test(String(line.message))));
      const progress = await ferry.progress();
      assert.equal(progress.state, 'IDLE');
    } finally {
      assert.equal(await ferry.stop(), 0);
    }
  });

  it('secrets of a connection string are told and masked without growing it', () => {
    for (const uri of ['mongodb://u:p@h', 'mongodb+srv://user:pass@h/?x=1', 'mongodb://h/?tlsCertificateKeyFilePassword=abc']) {
      assert.equal(holdsSecret(uri), true, uri);
      assert.ok(withoutSecrets(uri).length <= uri.length + 2, withoutSecrets(uri));
      assert.doesNotMatch(withoutSecrets(uri), /:p@|pass|abc/);
    }
    assert.equal(holdsSecret('mongodb://user@h/?authMechanism=MONGODB-X509'), false);
    assert.equal(holdsSecret('--loadLevel'), false);
  });
});
