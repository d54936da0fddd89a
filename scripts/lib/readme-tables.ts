/**
 * The README's tables of options and errors, rendered from the option table
 * (src/config/options.ts) and the error catalogue (src/errors/catalogue.ts). Each sits in the
 * README between `<!-- generated:NAME -->` and `<!-- /generated:NAME -->`; `npm run readme:tables`
 * rewrites them, and test/unit/readme-tables.test.ts fails when the README has drifted.
 */
import {
  FLAG_OPTIONS,
  ENV_OPTIONS,
  LOAD_LEVEL_NAMES,
  LOAD_LEVEL_OPTIONS,
  loadProfile,
  OPTIONS,
  type OptionSpec,
} from '../../src/config/options.js';
import { ERROR_CATALOGUE, ERROR_CODES, type ErrorSpec } from '../../src/errors/catalogue.js';

const MiB = 1024 * 1024;

function table(header: string[], rows: string[][]): string {
  return [header, header.map(() => '---'), ...rows].map((cells) => `| ${cells.join(' | ')} |`).join('\n');
}

function formatValue(spec: OptionSpec, value: number | string | boolean): string {
  if (spec.type === 'integer' && spec.unit === 'bytes' && typeof value === 'number' && value % MiB === 0) return `${value / MiB} MiB`;
  if (spec.type === 'choice' && spec.flag === false) return `\`${String(value)}\``;
  return String(value);
}

function defaultOf(spec: OptionSpec): string {
  if (spec.defaultText !== undefined) return spec.defaultText;
  if (spec.required === true) return 'required';
  if ('loadLevel' in spec && spec.loadLevel !== undefined) return 'from load level';
  if ('default' in spec && spec.default !== undefined) return formatValue(spec, spec.default);
  return 'none';
}

/** The flags: `| flag | default | meaning |`. */
export function flagsTable(): string {
  return table(
    ['flag', 'default', 'meaning'],
    FLAG_OPTIONS.map((name) => {
      const spec: OptionSpec = OPTIONS[name];
      const flag = spec.type === 'switch' ? `--${name}` : `--${name} ${spec.valueName ?? '<value>'}`;
      return [`\`${flag}\``, defaultOf(spec), spec.meaning ?? spec.help];
    }),
  );
}

/** What each load level sets. */
export function loadLevelTable(): string {
  return table(
    ['`--loadLevel`', ...LOAD_LEVEL_OPTIONS],
    ([1, 2, 3, 4] as const).map((level) => {
      const name = level === OPTIONS.loadLevel.default ? 'default' : LOAD_LEVEL_NAMES[level];
      const profile = loadProfile(level);
      return [
        name === undefined ? String(level) : `${level} (${name})`,
        ...LOAD_LEVEL_OPTIONS.map((o) => formatValue(OPTIONS[o], profile[o])),
      ];
    }),
  );
}

/** The tuning variables: `| variable | default | meaning |`. */
export function environmentTable(): string {
  return table(
    ['variable', 'default', 'meaning'],
    ENV_OPTIONS.map((name) => {
      const spec: OptionSpec = OPTIONS[name];
      return [`\`${spec.env!}\``, defaultOf(spec), spec.meaning ?? spec.help];
    }),
  );
}

const specOf = (code: (typeof ERROR_CODES)[number]): ErrorSpec => ERROR_CATALOGUE[code];

/** Errors of the control API: `| error | HTTP | when |`. */
export function apiErrorsTable(): string {
  return table(
    ['`error`', 'HTTP', 'when'],
    ERROR_CODES.filter((code) => specOf(code).status !== undefined).map((code) => [
      `\`${code}\``,
      String(specOf(code).status),
      specOf(code).when,
    ]),
  );
}

/** Errors that end startup: `| error | exit code | when |`. */
export function startupErrorsTable(): string {
  return table(
    ['error', 'exit code', 'when'],
    ERROR_CODES.filter((code) => specOf(code).exitCode !== undefined).map((code) => [
      `\`${code}\``,
      String(specOf(code).exitCode),
      specOf(code).when,
    ]),
  );
}

/** Errors in warnings and logs: `| code | when |`. */
export function internalErrorsTable(): string {
  return table(
    ['code', 'when'],
    ERROR_CODES.filter((code) => specOf(code).status === undefined && specOf(code).exitCode === undefined).map((code) => [
      `\`${code}\``,
      specOf(code).when,
    ]),
  );
}

/** Every generated table, by the name its README markers carry. */
export const README_TABLES: Record<string, () => string> = {
  flags: flagsTable,
  'load-levels': loadLevelTable,
  environment: environmentTable,
  'api-errors': apiErrorsTable,
  'startup-errors': startupErrorsTable,
  'internal-errors': internalErrorsTable,
};

/** Where a table's text lies in `readme` (between its markers), or undefined when the markers are missing. */
function sectionBounds(readme: string, name: string): { start: number; stop: number } | undefined {
  const begin = `<!-- generated:${name} -->\n`;
  const end = `<!-- /generated:${name} -->`;
  const at = readme.indexOf(begin);
  const stop = readme.indexOf(end, at);
  return at < 0 || stop < 0 ? undefined : { start: at + begin.length, stop };
}

/** The text between a table's markers in `readme` (without its last newline), or undefined when the markers are missing. */
export function generatedSection(readme: string, name: string): string | undefined {
  const bounds = sectionBounds(readme, name);
  return bounds === undefined ? undefined : readme.slice(bounds.start, bounds.stop).replace(/\n$/, '');
}

/** `readme` with every generated table rendered afresh. */
export function renderReadme(readme: string): string {
  let text = readme;
  for (const [name, render] of Object.entries(README_TABLES)) {
    const bounds = sectionBounds(text, name);
    if (bounds === undefined) throw new Error(`README has no <!-- generated:${name} --> section`);
    text = `${text.slice(0, bounds.start)}${render()}\n${text.slice(bounds.stop)}`;
  }
  return text;
}
