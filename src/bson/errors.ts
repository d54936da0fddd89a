/**
 * Raised when bytes that should hold a BSON document do not follow the BSON specification:
 * a size field pointing past the end, a missing terminator, an unknown type byte...
 * Nothing is read past the end of the input before this is thrown.
 */
export class MalformedBsonError extends Error {
  override readonly name = 'MalformedBsonError';
  /** Stable code for logs and for callers that branch on it. */
  readonly code = 'MalformedBson';

  /**
   * @param detail what is wrong, in words
   * @param offset byte offset (in the buffer given by the caller) where the problem was found
   */
  constructor(
    detail: string,
    readonly offset: number,
  ) {
    super(`malformed BSON at byte ${offset}: ${detail}`);
  }
}
