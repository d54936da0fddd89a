/**
 * The client side of SCRAM-SHA-256 (RFC 5802/7677), for the connections the processes of a
 * sharded test cluster open to each other when access control is on: they authenticate as the
 * cluster's internal user, as real members do with a keyfile (`__system`).
 */
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import { saslprep } from '@mongodb-js/saslprep';
import { Binary } from 'bson';
import { ServerError } from '../errors.js';

export interface InternalCredentials {
  user: string;
  password: string;
  /** Authentication database. */
  db: string;
}

interface CommandReply {
  ok: boolean;
  doc: Record<string, unknown>;
  error(): ServerError;
}

function hmac(key: Buffer, data: string): Buffer {
  return createHmac('sha256', key).update(data).digest();
}

function payloadOf(doc: Record<string, unknown>): string {
  const payload = doc.payload as Binary | Buffer;
  return Buffer.from(payload instanceof Binary ? payload.buffer : payload).toString('utf8');
}

/** Authenticates one connection (`run` sends a command on it). Throws AuthenticationFailed. */
export async function scramClientConversation(
  credentials: InternalCredentials,
  run: (db: string, body: Record<string, unknown>) => Promise<CommandReply>,
): Promise<void> {
  const nonce = randomBytes(24).toString('base64');
  const name = credentials.user.replace(/=/g, '=3D').replace(/,/g, '=2C');
  const clientFirstBare = `n=${name},r=${nonce}`;
  const first = await run(credentials.db, {
    saslStart: 1,
    mechanism: 'SCRAM-SHA-256',
    payload: new Binary(Buffer.from(`n,,${clientFirstBare}`)),
    autoAuthorize: 1,
    options: { skipEmptyExchange: true },
  });
  if (!first.ok) throw first.error();
  const serverFirst = payloadOf(first.doc);
  const attrs = new Map(serverFirst.split(',').map((p) => [p.slice(0, 1), p.slice(2)] as [string, string]));
  const serverNonce = attrs.get('r') ?? '';
  if (!serverNonce.startsWith(nonce)) throw new ServerError('AuthenticationFailed', 'SCRAM: server nonce does not extend ours');
  const salted = pbkdf2Sync(
    saslprep(credentials.password),
    Buffer.from(attrs.get('s') ?? '', 'base64'),
    Number(attrs.get('i')),
    32,
    'sha256',
  );
  const clientKey = hmac(salted, 'Client Key');
  const storedKey = createHash('sha256').update(clientKey).digest();
  const withoutProof = `c=biws,r=${serverNonce}`;
  const authMessage = `${clientFirstBare},${serverFirst},${withoutProof}`;
  const signature = hmac(storedKey, authMessage);
  const proof = Buffer.alloc(clientKey.length);
  for (let i = 0; i < proof.length; i++) proof[i] = clientKey[i]! ^ signature[i]!;
  let reply = await run(credentials.db, {
    saslContinue: 1,
    conversationId: first.doc.conversationId,
    payload: new Binary(Buffer.from(`${withoutProof},p=${proof.toString('base64')}`)),
  });
  if (!reply.ok) throw reply.error();
  const expected = `v=${hmac(hmac(salted, 'Server Key'), authMessage).toString('base64')}`;
  if (payloadOf(reply.doc) !== expected) throw new ServerError('AuthenticationFailed', 'SCRAM: the server signature does not match');
  while (reply.doc.done !== true) {
    reply = await run(credentials.db, { saslContinue: 1, conversationId: first.doc.conversationId, payload: new Binary(Buffer.alloc(0)) });
    if (!reply.ok) throw reply.error();
  }
}
