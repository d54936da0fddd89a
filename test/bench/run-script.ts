/**
 * Runs a compiled benchmark or script the way `npm run` does (its own node process) and reads the
 * result file it wrote. (Not a test file: helpers for the smoke tests.)
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** MongoDB's tools beside the project (`../shared/peers/mongo-tools/`), or MONGO_TOOLS_DIR. */
export const MONGO_TOOLS =
  process.env.MONGO_TOOLS_DIR ?? join(fileURLToPath(new URL('../../../', import.meta.url)), '..', 'shared', 'peers', 'mongo-tools');

/** Why a comparison with the tools is skipped here (they are not there), or false. */
export const mongoToolsSkip = ['mongodump', 'mongorestore'].some((tool) => !existsSync(join(MONGO_TOOLS, tool)))
  ? `MongoDB's tools are not in ${MONGO_TOOLS}`
  : false;

export interface ScriptRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `node dist/<path> ...args`; resolves when it exits. */
export function runScript(path: string, args: string[]): Promise<ScriptRun> {
  const main = fileURLToPath(new URL(`../../${path}`, import.meta.url));
  const child = spawn(process.execPath, [main, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Every directory `resultsDir` made, removed when the test process exits. */
const made: string[] = [];
process.once('exit', () => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** A fresh directory for result files (removed when the test process exits). */
export function resultsDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-bench-'));
  made.push(dir);
  return dir;
}

export function readResult(dir: string, name: string): Record<string, any> {
  return JSON.parse(readFileSync(join(dir, `${name}.json`), 'utf8')) as Record<string, any>;
}

/** The named fields that are not finite numbers above zero (empty when all are). */
export function notPositive(result: Record<string, any>, fields: readonly string[]): string[] {
  return fields.filter((field) => !(typeof result[field] === 'number' && Number.isFinite(result[field]) && result[field] > 0));
}
