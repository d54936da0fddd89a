import { Long } from 'bson';

/**
 * Server-wide counters `serverStatus` reports: connections, mongod's `opcounters`
 * (insert counts documents, update/delete count statements, query counts finds, getmore
 * getMores, command every other command), counted as requests arrive, and
 * `metrics.commands` (each command's requests and failures, by its canonical name).
 */

export class ServerCounters {
  connectionsCurrent = 0;
  connectionsTotalCreated = 0;
  readonly opcounters = { insert: 0, query: 0, update: 0, delete: 0, getmore: 0, command: 0 };
  /** TTL monitor passes and the documents they deleted (serverStatus.metrics.ttl). */
  ttlPasses = 0;
  ttlDeletedDocuments = 0;
  /** Requests and failed requests per command (serverStatus.metrics.commands.<name>). */
  readonly commands = new Map<string, { total: number; failed: number }>();
  /** Requests naming no known command (serverStatus.metrics.commands['<UNKNOWN>']). */
  unknownCommands = 0;

  connectionOpened(): void {
    this.connectionsCurrent++;
    this.connectionsTotalCreated++;
  }

  connectionClosed(): void {
    this.connectionsCurrent--;
  }

  /** Counts a request whose command ended in an error reply (metrics.commands.<name>.failed). */
  commandFailed(name: string): void {
    const counts = this.commands.get(name);
    if (counts) counts.failed++;
  }

  /**
   * Counts one command request the way mongod's opcounters do, and under `canonical`
   * (the command's own name, whatever alias the request used) in metrics.commands.
   */
  countCommand(name: string, canonical: string, body: Record<string, unknown>, sequences: Map<string, Buffer[]>): void {
    const counts = this.commands.get(canonical);
    if (counts) counts.total++;
    else this.commands.set(canonical, { total: 1, failed: 0 });
    const statements = (field: string) =>
      sequences.get(field)?.length ?? (Array.isArray(body[field]) ? (body[field] as unknown[]).length : 0);
    switch (name) {
      case 'insert':
        this.opcounters.insert += statements('documents');
        break;
      case 'update':
        this.opcounters.update += statements('updates');
        break;
      case 'delete':
        this.opcounters.delete += statements('deletes');
        break;
      case 'find':
        this.opcounters.query++;
        break;
      case 'getMore':
        this.opcounters.getmore++;
        break;
      default:
        this.opcounters.command++;
    }
  }

  /** serverStatus.metrics.commands: `{<name>: {failed, total}}` plus `'<UNKNOWN>'`, as Longs. */
  commandMetrics(): Record<string, unknown> {
    const metrics: Record<string, unknown> = { '<UNKNOWN>': Long.fromNumber(this.unknownCommands) };
    for (const name of [...this.commands.keys()].sort()) {
      const { failed, total } = this.commands.get(name)!;
      metrics[name] = { failed: Long.fromNumber(failed), total: Long.fromNumber(total) };
    }
    return metrics;
  }
}
