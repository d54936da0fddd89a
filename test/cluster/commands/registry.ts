/**
 * The command table. Each command module calls `defineCommand` for the commands it serves;
 * the dispatcher looks them up by the first field of the request body, as mongod does.
 */
import type { Instance, OpContext } from '../instance.js';

/** Per-connection facts a command may need. */
export interface ConnectionInfo {
  id: number;
  /** Authenticated user (`user@db`) when the cluster runs with users; undefined otherwise. */
  user?: string;
  /** Set by commands that authenticate (SASL conversations keep state here). */
  state: Map<string, unknown>;
  /** Drops the connection without a reply (fail points' `closeConnection`); set by the server. */
  close?: () => void;
}

export interface CommandContext {
  instance: Instance;
  /** `$db` of the request. */
  db: string;
  /** The request body, decoded (numbers promoted). */
  body: Record<string, unknown>;
  /** The request body as received. */
  raw: Buffer;
  /** OP_MSG kind-1 document sequences (e.g. `documents` of an insert), raw. */
  sequences: Map<string, Buffer[]>;
  /** Session/transaction context of the writes this command makes. */
  op: OpContext;
  connection: ConnectionInfo;
}

export type CommandReply = Record<string, unknown>;

/**
 * Code that runs around every command (fail points, the data directory's journal). `before` runs
 * once the command is known and its fields checked, before access control, and may fail or delay
 * it; `after` sees the reply (success or error) and the command's duration, and may add to it or delay it.
 */
export interface CommandHook {
  before?(ctx: CommandContext, name: string): void | Promise<void>;
  after?(ctx: CommandContext, name: string, reply: CommandReply, millis: number): void | Promise<void>;
}

export interface CommandSpec {
  /** The command's name as it appears as the body's first field. */
  name: string;
  /** Other names it answers to (`isMaster` ↔ `ismaster`). */
  aliases?: string[];
  /** Only runs against the `admin` database (mongod's adminOnly commands). */
  adminOnly?: boolean;
  /** Served without authentication (handshake and auth commands). */
  noAuth?: boolean;
  handler(ctx: CommandContext): CommandReply | Promise<CommandReply>;
}

const commands = new Map<string, CommandSpec>();

export function defineCommand(spec: CommandSpec): void {
  for (const name of [spec.name, ...(spec.aliases ?? [])]) {
    if (commands.has(name)) throw new Error(`command ${name} defined twice`);
    commands.set(name, spec);
  }
}

export function lookupCommand(name: string): CommandSpec | undefined {
  return commands.get(name);
}
