/**
 * Logs: mongosync-shaped JSON lines with the instance id, filtered by verbosity, never holding a
 * connection-string password; files rotated as mongosync rotates them (at startup and on SIGUSR1).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createLogger, LOG_FILE_NAME } from '../../src/log/logger.js';
import { redactUris } from '../../src/domain/credentials.js';

function lines(path: string): Record<string, unknown>[] {
  return readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line));
}

describe('redactUris', () => {
  const cases: [string, string][] = [
    ['mongodb://user:pa55@h:27017/db', 'mongodb://<credentials>@h:27017/db'],
    ['mongodb+srv://user:pa55@c.example.net/?w=1', 'mongodb+srv://<credentials>@c.example.net/?w=1'],
    ['failed: MONGODB://a:b@h1,h2/x and mongodb://c:d@h3', 'failed: MONGODB://<credentials>@h1,h2/x and mongodb://<credentials>@h3'],
    ['mongodb://us%40er:p%2Fw@h/', 'mongodb://<credentials>@h/'],
    ['mongodb://u:p@ss@h/', 'mongodb://<credentials>@h/'],
    ['mongodb://h:27017/?replicaSet=rs0', 'mongodb://h:27017/?replicaSet=rs0'],
    ['no uri here', 'no uri here'],
  ];
  for (const [input, output] of cases) {
    it(input, () => assert.equal(redactUris(input), output));
  }
});

describe('createLogger', () => {
  it('writes JSON lines with time, level, mongosyncID and message to <logPath>/ferry.log', () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'ferry-log-')), 'nested', 'logs');
    const log = createLogger({ id: 'shard-a', verbosity: 'INFO', logPath: dir });
    log.logger.info({ port: 1 }, 'hello');
    log.flush();
    assert.equal(log.target, join(dir, LOG_FILE_NAME));
    const [started, line] = lines(log.target);
    assert.equal(started!.message, 'Log file started');
    assert.equal(started!.previousFile, undefined, 'nothing to rotate in a new directory');
    assert.equal(line!.level, 'info');
    assert.equal(line!.mongosyncID, 'shard-a');
    assert.match(String(line!.serverID), /^[0-9a-f]{8}$/);
    assert.equal(line!.serverID, log.serverID);
    assert.equal(line!.message, 'hello');
    assert.equal(line!.port, 1);
    assert.match(String(line!.time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it("an error is mongosync's `error` string (and `stack`), with Ferry's code as `errorCode`", () => {
    const dir = mkdtempSync(join(tmpdir(), 'ferry-log-'));
    const log = createLogger({ id: 'x', verbosity: 'INFO', logPath: dir });
    const error = Object.assign(new Error('the destination refused it'), { code: 'ApplyWriteRefused' });
    log.logger.error({ err: error, ns: 'db.c' }, 'Change-event application stopped');
    log.flush();
    const line = lines(log.target).at(-1)!;
    assert.equal(line.error, 'the destination refused it');
    assert.equal(line.errorCode, 'ApplyWriteRefused');
    assert.match(String(line.stack), /^Error: the destination refused it\n\s+at /);
    assert.equal(line.err, undefined);
    assert.equal(line.ns, 'db.c');
  });

  it('logs only at or above the verbosity, PANIC included', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ferry-log-'));
    const log = createLogger({ id: 'x', verbosity: 'WARN', logPath: dir });
    log.logger.debug('no');
    log.logger.info('no');
    log.logger.warn('yes warn');
    log.logger.panic('yes panic');
    log.setVerbosity('DEBUG');
    log.logger.debug('yes debug');
    log.flush();
    assert.deepEqual(
      lines(log.target).map((l) => [l.level, l.message]),
      [
        ['warn', 'yes warn'],
        ['panic', 'yes panic'],
        ['debug', 'yes debug'],
      ],
    );
  });

  it('never writes a connection-string password, in messages, fields or errors', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ferry-log-'));
    const log = createLogger({ id: 'x', verbosity: 'TRACE', logPath: dir });
    const uri = 'mongodb://ferry:t0p-s3cret@db.example:27017/?replicaSet=rs0';
    log.logger.error({ err: new Error(`cannot reach ${uri}`), uri }, `connecting to ${uri}`);
    log.flush();
    const text = readFileSync(log.target, 'utf8');
    assert.doesNotMatch(text, /t0p-s3cret/);
    assert.match(text, /mongodb:\/\/<credentials>@db\.example:27017/);
  });

  it('rotate() renames ferry.log to ferry-<UTC time>.log and opens a new one that names it (SIGUSR1, as mongosync)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ferry-log-'));
    const log = createLogger({ id: 'x', verbosity: 'INFO', logPath: dir });
    log.logger.info('before');
    const rotated = log.rotate()!;
    log.logger.info('after');
    log.flush();
    assert.match(rotated, /ferry-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}\.log$/);
    assert.deepEqual(
      lines(rotated).map((l) => l.message),
      ['Log file started', 'before'],
    );
    const now = lines(log.target);
    assert.deepEqual(
      now.map((l) => l.message),
      ['Log file rotated', 'after'],
    );
    assert.equal(now[0]!.previousFile, rotated);
  });

  it('rotate() after an external tool moved the file away only opens a new one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ferry-log-'));
    const log = createLogger({ id: 'x', verbosity: 'INFO', logPath: dir });
    log.logger.info('before');
    renameSync(log.target, `${log.target}.1`);
    assert.equal(log.rotate(), undefined);
    log.logger.info('after');
    log.flush();
    assert.deepEqual(
      lines(`${log.target}.1`).map((l) => l.message),
      ['Log file started', 'before'],
    );
    assert.deepEqual(
      lines(log.target).map((l) => l.message),
      ['Log file rotated', 'after'],
    );
  });

  it('a ferry.log an earlier run left is renamed aside at startup, never silently appended to', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ferry-log-'));
    writeFileSync(join(dir, LOG_FILE_NAME), '{"message":"an earlier run"}\n');
    const log = createLogger({ id: 'x', verbosity: 'INFO', logPath: dir });
    log.flush();
    const [first] = lines(log.target);
    assert.equal(first!.message, 'Log file started');
    assert.match(String(first!.previousFile), /ferry-.*\.log$/);
    assert.deepEqual(lines(String(first!.previousFile)), [{ message: 'an earlier run' }]);
    assert.equal(readdirSync(dir).length, 2);
  });

  it('a log path that cannot be a directory is a InvalidConfiguration', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ferry-log-'));
    const log = createLogger({ id: 'x', verbosity: 'INFO', logPath: dir });
    log.logger.info('x');
    assert.throws(() => createLogger({ id: 'x', verbosity: 'INFO', logPath: log.target }), {
      name: 'InvalidConfiguration',
      message: /--logPath .* cannot be used/,
    });
  });
});
