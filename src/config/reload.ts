/**
 * A live reload of the options (SIGHUP): the config file is read again and every option checked
 * as at startup (flags still win over the file). All or nothing: one bad value refuses the reload
 * by name and nothing changes. Of a good file, only the options marked `live` in the option table
 * take effect (loadLevel and what it sets, the copy and apply concurrency, batch bytes, verbosity);
 * a change to any other option is reported as needing a restart and not applied.
 */
import { InvalidConfiguration } from '../errors/errors.js';
import { LIVE_OPTIONS, OPTION_NAMES, type FerryOptions, type OptionName } from './options.js';
import { resolveOptions, type RawOptions } from './resolve.js';

export interface OptionChange {
  option: OptionName;
  from: unknown;
  to: unknown;
}

export interface ReloadResult {
  /** The options in force from now on (the current ones with the live changes applied). */
  options: FerryOptions;
  /** Live options whose value changed. */
  applied: OptionChange[];
  /** Other options whose value changed in the file: they take effect only at a restart. */
  needRestart: OptionName[];
}

function comparable(value: unknown): string {
  const endpoint = value as { uri?: string } | undefined;
  return JSON.stringify(endpoint?.uri ?? value);
}

/**
 * Reads the config file named by `flags.config` again and works out what changes. Throws
 * InvalidConfiguration (naming the option) when anything is wrong; nothing is changed then.
 */
export function reloadOptions(current: FerryOptions, flags: RawOptions, env: NodeJS.ProcessEnv = process.env): ReloadResult {
  if (flags.config === undefined) {
    throw new InvalidConfiguration('no --config file to read again: Ferry was started with flags only (restart it to change options)');
  }
  const next = resolveOptions(flags, env);
  const live = new Set<OptionName>(LIVE_OPTIONS);
  const applied: OptionChange[] = [];
  const needRestart: OptionName[] = [];
  const options = { ...current } as Record<string, unknown>;
  for (const option of OPTION_NAMES) {
    const from = (current as Record<string, unknown>)[option];
    const to = (next as Record<string, unknown>)[option];
    if (comparable(from) === comparable(to)) continue;
    if (live.has(option)) {
      applied.push({ option, from, to });
      options[option] = to;
    } else {
      needRestart.push(option);
    }
  }
  return { options: options as FerryOptions, applied, needRestart };
}
