import { redactUris } from '../domain/credentials.js';
/**
 * A problem with how Ferry was started (flags, config file, connection strings). The CLI prints
 * its message as one line and exits non-zero before touching anything.
 */

export class ConfigError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(redactUris(message), options);
    this.name = 'ConfigError';
  }
}
