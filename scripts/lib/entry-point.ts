/**
 * Runs a script's `main` when its module is the process's entry point (not when a test or another
 * script imports it). A failure prints one line — never a connection string's credentials — and
 * sets exit code 1.
 */
import { pathToFileURL } from 'node:url';
import { redactUris } from '../../src/domain/credentials.js';

export function runIfEntryPoint(moduleUrl: string, name: string, main: (argv: string[]) => Promise<void>): void {
  if (process.argv[1] === undefined || moduleUrl !== pathToFileURL(process.argv[1]).href) return;
  main(process.argv).catch((error: Error) => {
    process.stderr.write(`${name} failed: ${redactUris(error.message)}\n`);
    process.exitCode = 1;
  });
}
