/**
 * The router's command table and the context its commands run in. A command's body is decoded
 * with BSON types kept (Int32, Long, Double): what the router forwards keeps the client's types,
 * and shard keys route exactly (hashed keys are int64).
 */
import type { Long } from 'bson';
import { ServerError } from '../errors.js';
import type { Router, RouterConnection } from './router.js';

export type { RouterConnection };

export interface RouterContext {
  router: Router;
  db: string;
  /** The request body, types kept. */
  body: Record<string, unknown>;
  /** The request body as received. */
  raw: Buffer;
  /** OP_MSG document sequences, raw. */
  sequences: Map<string, Buffer[]>;
  connection: RouterConnection;
  /** Session fields of the request. */
  lsid?: { id: unknown };
  txnNumber?: Long;
  /** `autocommit: false`: the command belongs to a transaction. */
  inTransaction: boolean;
}

export type RouterReply = Record<string, unknown>;

export interface RouterCommand {
  name: string;
  aliases?: string[];
  adminOnly?: boolean;
  /** Served without authentication (handshake and auth). */
  noAuth?: boolean;
  handler(ctx: RouterContext): RouterReply | Promise<RouterReply>;
}

const table = new Map<string, RouterCommand>();

export function defineRouterCommand(command: RouterCommand): void {
  for (const name of [command.name, ...(command.aliases ?? [])]) {
    if (table.has(name)) throw new Error(`router command ${name} defined twice`);
    table.set(name, command);
  }
}

export function lookupRouterCommand(name: string): RouterCommand | undefined {
  return table.get(name);
}

/** The collection a command names in `field` (its first field, usually). */
export function collectionArg(ctx: RouterContext, field: string): string {
  const name = ctx.body[field];
  if (typeof name !== 'string' || name.length === 0) {
    throw new ServerError('InvalidNamespace', `Invalid namespace specified '${ctx.db}.${String(name)}'`);
  }
  return name;
}
