/**
 * Logs: mongosync-shaped JSON lines with the instance id, filtered by verbosity, never holding a
 * connection-string password, and reopened after rotation.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, renameSync } from 'node:fs';
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
    const [line] = lines(log.target);
    assert.equal(line!.level, 'info');
    assert.equal(line!.mongosyncID, 'shard-a');
    assert.equal(line!.message, 'hello');
    assert.equal(line!.port, 1);
    assert.match(String(line!.time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('logs only at or above the verbosity, PANIC included', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ferry-log-'));
    const log = createLogger({ id: 'x', verbosity: 'WARN', logPath: dir });
    log.logger.debug('no');
    log.logger.info('no');
    log.logger.warn('yes warn');
    log.logger.panic('yes panic');
    log.flush();
    assert.deepEqual(
      lines(log.target).map((l) => [l.level, l.message]),
      [
        ['warn', 'yes warn'],
        ['panic', 'yes panic'],
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

  it('reopen() starts a new file after the old one was moved away (rotation)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ferry-log-'));
    const log = createLogger({ id: 'x', verbosity: 'INFO', logPath: dir });
    log.logger.info('before');
    renameSync(log.target, `${log.target}.1`);
    log.logger.info('still to the moved file');
    log.reopen();
    log.logger.info('after');
    log.flush();
    assert.deepEqual(
      lines(`${log.target}.1`).map((l) => l.message),
      ['before', 'still to the moved file'],
    );
    assert.ok(existsSync(log.target));
    assert.deepEqual(
      lines(log.target).map((l) => l.message),
      ['after'],
    );
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
