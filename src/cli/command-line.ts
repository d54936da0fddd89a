/**
 * Secrets on Ferry's own command line. Any local user can read a process's arguments (`ps`,
 * `/proc/<pid>/cmdline`), so a connection string with a password given as a flag leaks. The README
 * tells operators to use `--config` (a file only they can read) or `FERRY_CLUSTER0`/`FERRY_CLUSTER1`
 * (a process's environment is readable by its own user only); when a password comes as a flag
 * anyway, Ferry overwrites its arguments as soon as it runs (setting `process.title` rewrites the
 * memory `/proc/<pid>/cmdline` reads) and says so. It cannot undo the moment before that.
 */

/** The secret parts of a connection string: a password in the user info, and options that are secrets. */
const SECRETS = [
  /(mongodb(?:\+srv)?:\/\/)[^@/\s]*:[^@/\s]*@/gi,
  /((?:tlsCertificateKeyFilePassword|sslPEMKeyPassword|authMechanismProperties)=)[^&\s]*/gi,
];

/** Whether an argument holds a secret of a connection string. */
export function holdsSecret(argument: string): boolean {
  return SECRETS.some((pattern) => new RegExp(pattern.source, pattern.flags).test(argument));
}

/** An argument with its secrets replaced by `***` (never longer than the argument: the title must fit where argv was). */
export function withoutSecrets(argument: string): string {
  return SECRETS.reduce((text, pattern) => text.replace(pattern, '$1***' + (pattern === SECRETS[0] ? '@' : '')), argument);
}

/**
 * Overwrites this process's command line with `ferry` and its arguments, secrets replaced, when any
 * argument holds one; returns whether it did.
 */
export function scrubCommandLine(argv: readonly string[] = process.argv): boolean {
  const args = argv.slice(2);
  if (!args.some(holdsSecret)) return false;
  process.title = ['ferry', ...args.map(withoutSecrets)].join(' ');
  return true;
}

/**
 * Done when this module is first imported (main.ts imports it before anything else), not when
 * main() runs: loading the rest of Ferry takes long enough for `ps` to catch the password.
 */
export const SCRUBBED_AT_STARTUP = scrubCommandLine();
