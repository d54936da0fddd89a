/**
 * Server-wide counters `serverStatus` reports: connections and mongod's `opcounters`
 * (insert counts documents, update/delete count statements, query counts finds, getmore
 * getMores, command every other command), counted as requests arrive.
 */

export class ServerCounters {
  connectionsCurrent = 0;
  connectionsTotalCreated = 0;
  readonly opcounters = { insert: 0, query: 0, update: 0, delete: 0, getmore: 0, command: 0 };
  /** TTL monitor passes and the documents they deleted (serverStatus.metrics.ttl). */
  ttlPasses = 0;
  ttlDeletedDocuments = 0;

  connectionOpened(): void {
    this.connectionsCurrent++;
    this.connectionsTotalCreated++;
  }

  connectionClosed(): void {
    this.connectionsCurrent--;
  }

  /** Counts one command request the way mongod's opcounters do. */
  countCommand(name: string, body: Record<string, unknown>, sequences: Map<string, Buffer[]>): void {
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
}
