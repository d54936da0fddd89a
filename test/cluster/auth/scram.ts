/**
 * The server side of SCRAM-SHA-1 and SCRAM-SHA-256 (RFC 5802, RFC 7677) as mongod runs it:
 * SCRAM-SHA-1 hashes MongoDB's password digest (hex MD5 of `user:mongo:password`),
 * SCRAM-SHA-256 the SASLprep'd password; iteration counts are mongod's defaults.
 */
import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto';
import { saslprep } from '@mongodb-js/saslprep';

export type ScramMechanism = 'SCRAM-SHA-1' | 'SCRAM-SHA-256';
export const SCRAM_MECHANISMS: ScramMechanism[] = ['SCRAM-SHA-1', 'SCRAM-SHA-256'];

/** What mongod stores per mechanism in `admin.system.users` `credentials`. */
export interface ScramCredential {
  iterationCount: number;
  salt: string;
  storedKey: string;
  serverKey: string;
}

const PARAMETERS = {
  'SCRAM-SHA-1': { hash: 'sha1', keyLength: 20, saltLength: 16, iterations: 10000 },
  'SCRAM-SHA-256': { hash: 'sha256', keyLength: 32, saltLength: 28, iterations: 15000 },
} as const;

function hmac(hash: string, key: Buffer, data: string | Buffer): Buffer {
  return createHmac(hash, key).update(data).digest();
}

function digest(hash: string, data: Buffer): Buffer {
  return createHash(hash).update(data).digest();
}

/** The secret SCRAM salts: MongoDB's digest for SHA-1, the SASLprep'd password for SHA-256. */
function passwordInput(mechanism: ScramMechanism, user: string, password: string): string {
  if (mechanism === 'SCRAM-SHA-1') return createHash('md5').update(`${user}:mongo:${password}`).digest('hex');
  return saslprep(password);
}

/** Derives the stored credential for a new user. */
export function makeCredential(mechanism: ScramMechanism, user: string, password: string): ScramCredential {
  const p = PARAMETERS[mechanism];
  const salt = randomBytes(p.saltLength);
  const salted = pbkdf2Sync(passwordInput(mechanism, user, password), salt, p.iterations, p.keyLength, p.hash);
  const clientKey = hmac(p.hash, salted, 'Client Key');
  return {
    iterationCount: p.iterations,
    salt: salt.toString('base64'),
    storedKey: digest(p.hash, clientKey).toString('base64'),
    serverKey: hmac(p.hash, salted, 'Server Key').toString('base64'),
  };
}

/** Parses `a=1,b=2` SCRAM attribute lists. */
function attributes(message: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of message.split(',')) {
    const eq = part.indexOf('=');
    if (eq > 0) out.set(part.slice(0, eq), part.slice(eq + 1));
  }
  return out;
}

/** SASL name unescaping (RFC 5802 §5.1: `=2C` is `,`, `=3D` is `=`). */
function unescapeName(name: string): string {
  return name.replace(/=2C/g, ',').replace(/=3D/g, '=');
}

export class ScramError extends Error {}

/** One SCRAM conversation on one connection. */
export class ScramConversation {
  private clientFirstBare = '';
  private serverFirst = '';
  private nonce = '';
  private credential: ScramCredential | undefined;
  /** The user named in the client's first message. */
  user = '';

  constructor(readonly mechanism: ScramMechanism) {}

  /**
   * Handles client-first-message (`n,,n=user,r=nonce`). `lookup` returns the user's stored
   * credential (undefined when the user does not exist: the conversation continues with a
   * fake salt so that a missing user is indistinguishable from a wrong password).
   */
  start(payload: Buffer, lookup: (user: string) => ScramCredential | undefined): Buffer {
    const message = payload.toString('utf8');
    if (!message.startsWith('n,') && !message.startsWith('y,')) throw new ScramError('Incorrect SCRAM client message prefix');
    const header = message.indexOf(',', 2);
    if (header < 0) throw new ScramError('Incorrect number of arguments for first SCRAM client message');
    this.clientFirstBare = message.slice(header + 1);
    const attrs = attributes(this.clientFirstBare);
    const name = attrs.get('n');
    const clientNonce = attrs.get('r');
    if (name === undefined || clientNonce === undefined) throw new ScramError('Incorrect SCRAM client message');
    this.user = unescapeName(name);
    this.credential = lookup(this.user);
    const p = PARAMETERS[this.mechanism];
    const salt = this.credential?.salt ?? randomBytes(p.saltLength).toString('base64');
    const iterations = this.credential?.iterationCount ?? p.iterations;
    this.nonce = clientNonce + randomBytes(24).toString('base64');
    this.serverFirst = `r=${this.nonce},s=${salt},i=${iterations}`;
    return Buffer.from(this.serverFirst, 'utf8');
  }

  /** Handles client-final-message; returns server-final-message (`v=signature`) when the proof holds. */
  finish(payload: Buffer): Buffer {
    const message = payload.toString('utf8');
    const proofAt = message.lastIndexOf(',p=');
    if (proofAt < 0) throw new ScramError('Incorrect number of arguments for final SCRAM client message');
    const withoutProof = message.slice(0, proofAt);
    const attrs = attributes(message);
    if (attrs.get('r') !== this.nonce) throw new ScramError('Unmatched SCRAM nonce received from client in second step');
    if (!this.credential) throw new ScramError('Authentication failed.');
    const p = PARAMETERS[this.mechanism];
    const authMessage = `${this.clientFirstBare},${this.serverFirst},${withoutProof}`;
    const storedKey = Buffer.from(this.credential.storedKey, 'base64');
    const clientSignature = hmac(p.hash, storedKey, authMessage);
    const proof = Buffer.from(attrs.get('p') ?? '', 'base64');
    if (proof.length !== clientSignature.length) throw new ScramError('Authentication failed.');
    const clientKey = Buffer.alloc(proof.length);
    for (let i = 0; i < proof.length; i++) clientKey[i] = proof[i] ^ clientSignature[i];
    if (!timingSafeEqual(digest(p.hash, clientKey), storedKey)) throw new ScramError('Authentication failed.');
    const serverSignature = hmac(p.hash, Buffer.from(this.credential.serverKey, 'base64'), authMessage);
    return Buffer.from(`v=${serverSignature.toString('base64')}`, 'utf8');
  }
}
