/**
 * The client side of SCRAM-SHA-1 and SCRAM-SHA-256 (RFC 5802, RFC 7677) as MongoDB runs it, for
 * Ferry's own wire connection (src/cluster/wire-writes.ts): `saslStart` / `saslContinue` on the
 * credentials' source database. SCRAM-SHA-1 salts MongoDB's password digest (hex MD5 of
 * `user:mongo:password`), SCRAM-SHA-256 the SASLprep'd password. The server's signature is
 * checked, so a server that does not know the password cannot pass as one that does.
 */
import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto';
import { Binary, type Document } from 'bson';
import { saslprep } from '@mongodb-js/saslprep';

export type ScramMechanism = 'SCRAM-SHA-1' | 'SCRAM-SHA-256';

/** Sends one command to `db` on the connection being authenticated; resolves with the reply (ok: 1). */
export type RunCommand = (db: string, command: Document) => Promise<Document>;

/** The server refused the login or proved it does not know the password. */
export class WireAuthenticationFailed extends Error {
  override readonly name = 'WireAuthenticationFailed';
}

const HASH = { 'SCRAM-SHA-1': 'sha1', 'SCRAM-SHA-256': 'sha256' } as const;

const hmac = (hash: string, key: Buffer, data: string | Buffer) => createHmac(hash, key).update(data).digest();

/** RFC 5802's escaping of the user name (`=` and `,`). */
const escapeUser = (user: string) => user.replace(/=/g, '=3D').replace(/,/g, '=2C');

function attributes(message: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of message.split(',')) {
    const eq = part.indexOf('=');
    if (eq > 0) out.set(part.slice(0, eq), part.slice(eq + 1));
  }
  return out;
}

const payloadText = (reply: Document) => Buffer.from((reply.payload as Binary).buffer).toString('utf8');

/** Logs in `user` with `password` on `source` over the connection `run` talks to. */
export async function scramLogin(
  run: RunCommand,
  mechanism: ScramMechanism,
  source: string,
  user: string,
  password: string,
): Promise<void> {
  const hash = HASH[mechanism];
  const nonce = randomBytes(24).toString('base64');
  const clientFirstBare = `n=${escapeUser(user)},r=${nonce}`;
  const first = await run(source, {
    saslStart: 1,
    mechanism,
    payload: new Binary(Buffer.from(`n,,${clientFirstBare}`)),
    autoAuthorize: 1,
    options: { skipEmptyExchange: true },
  });
  const serverFirst = payloadText(first);
  const server = attributes(serverFirst);
  const serverNonce = server.get('r') ?? '';
  const iterations = Number(server.get('i'));
  if (!serverNonce.startsWith(nonce) || !Number.isInteger(iterations) || iterations < 4096 || server.get('s') === undefined) {
    throw new WireAuthenticationFailed(`${mechanism}: the server's first message is not valid SCRAM`);
  }
  const secret = mechanism === 'SCRAM-SHA-1' ? createHash('md5').update(`${user}:mongo:${password}`).digest('hex') : saslprep(password);
  const keyLength = mechanism === 'SCRAM-SHA-1' ? 20 : 32;
  const salted = pbkdf2Sync(secret, Buffer.from(server.get('s')!, 'base64'), iterations, keyLength, hash);
  const clientKey = hmac(hash, salted, 'Client Key');
  const storedKey = createHash(hash).update(clientKey).digest();
  const withoutProof = `c=biws,r=${serverNonce}`;
  const authMessage = `${clientFirstBare},${serverFirst},${withoutProof}`;
  const signature = hmac(hash, storedKey, authMessage);
  const proof = Buffer.from(clientKey.map((byte, i) => byte ^ signature[i]!));
  const final = await run(source, {
    saslContinue: 1,
    conversationId: first.conversationId as unknown,
    payload: new Binary(Buffer.from(`${withoutProof},p=${proof.toString('base64')}`)),
  });
  const verifier = Buffer.from(attributes(payloadText(final)).get('v') ?? '', 'base64');
  const expected = hmac(hash, hmac(hash, salted, 'Server Key'), authMessage);
  if (verifier.length !== expected.length || !timingSafeEqual(verifier, expected)) {
    throw new WireAuthenticationFailed(`${mechanism}: the server's signature does not match`);
  }
  let reply = final;
  while (reply.done !== true) {
    reply = await run(source, { saslContinue: 1, conversationId: first.conversationId as unknown, payload: new Binary(Buffer.alloc(0)) });
  }
}
