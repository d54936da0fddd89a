/**
 * The driver's internal message module (mongodb/lib/cmap/commands.js), which its package does not
 * type: Ferry reads only `DocumentSequence` from it (src/cluster/raw-writes.ts), and checks its
 * shape before use, since another driver version may not have it.
 */
declare module 'mongodb/lib/cmap/commands.js' {
  export const DocumentSequence: unknown;
}
