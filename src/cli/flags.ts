/**
 * The command line, defined with commander from the option table (src/config/options.ts). Only
 * flags actually given appear in the result, so that values from `--config`, the environment and
 * the defaults can fill in the rest (src/config/resolve.ts).
 */
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { FLAG_OPTIONS, OPTIONS, type OptionSpec } from '../config/options.js';
import type { RawOptions } from '../config/resolve.js';

const PACKAGE_JSON = new URL('../../../package.json', import.meta.url);

/** Ferry's version, from package.json. */
export function version(): string {
  try {
    return (JSON.parse(readFileSync(PACKAGE_JSON, 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

/** The help line of an option: its help, then its default. */
function helpOf(spec: OptionSpec): string {
  if (spec.required === true || spec.type === 'switch') return spec.help;
  if ('loadLevel' in spec && spec.loadLevel !== undefined) return `${spec.help} (default from --loadLevel)`;
  if ('default' in spec && spec.default !== undefined) return `${spec.help} (default ${String(spec.default)})`;
  return spec.help;
}

export function buildProgram(): Command {
  const program = new Command('ferry')
    .description('Copies a MongoDB cluster to another and keeps it current until cut-over; mongosync-compatible control API.')
    // mongosync's short form of --version is -v.
    .version(version(), '-v, --version');
  for (const name of FLAG_OPTIONS) {
    const spec: OptionSpec = OPTIONS[name];
    if (spec.type === 'jsonList') {
      // Given once per value: each occurrence adds one.
      const collect = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value];
      program.option(`--${name} ${spec.valueName ?? '<value>'}`, helpOf(spec), collect);
    } else {
      program.option(spec.type === 'switch' ? `--${name}` : `--${name} ${spec.valueName ?? '<value>'}`, helpOf(spec));
    }
  }
  return (
    program
      .allowExcessArguments(false)
      .exitOverride()
      // Errors are printed by main as one line; help and version still go to stdout.
      .configureOutput({ writeErr: () => {} })
  );
}

/** Parses `process.argv`-style arguments; throws commander's CommanderError on bad usage, help or version. */
export function parseFlags(argv: readonly string[]): RawOptions {
  const program = buildProgram();
  program.parse([...argv], { from: 'node' });
  return program.opts();
}
