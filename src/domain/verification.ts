/**
 * The embedded verifier's vocabulary (src/verify/ does the work): what progress shows of it
 * (mongosync's `verification` object, reference.md), the kinds of difference it reports, and the
 * report an operator fetches with `GET /api/v1/verification`.
 */

/**
 * mongosync's verifier phases, per cluster: `not started` (no initial scan yet), `initial hashing`
 * (scanning at least one collection), `stream hashing` (every collection scanned; following the
 * cluster's change stream). A collection scanned again (after a rename or drop) goes back to
 * `initial hashing`.
 */
export const VERIFICATION_PHASES = ['not started', 'initial hashing', 'stream hashing'] as const;
export type VerificationPhase = (typeof VERIFICATION_PHASES)[number];

/** `verification.source` / `verification.destination` in progress, as mongosync names them. */
export interface VerificationSide {
  phase: VerificationPhase;
  /** Documents of this cluster the verifier has read and compared (initial scan and re-checks). */
  hashedDocumentCount: number;
  /** Documents this cluster held when verification planned its scan. */
  estimatedDocumentCount: number;
  /** Seconds between this cluster's latest time and the point up to which its changes are checked. */
  lagTimeSeconds: number;
  /** Collections whose initial scan is complete. */
  scannedCollectionCount: number;
  /** Collections to verify. */
  totalCollectionCount: number;
}

export interface VerificationProgress {
  source: VerificationSide;
  destination: VerificationSide;
}

/**
 * How the destination differs from the source:
 * - `missing`: a document (or a collection or view) the source has and the destination lacks;
 * - `extra`: one the destination has and the source lacks;
 * - `different`: a document whose BSON differs (a value, a type, a field's order);
 * - `index`: an index missing, extra or defined otherwise;
 * - `option`: collection options or a view's definition differ (or a collection became a view).
 */
export const MISMATCH_KINDS = ['missing', 'extra', 'different', 'index', 'option'] as const;
export type MismatchKind = (typeof MISMATCH_KINDS)[number];

/** One difference, as the report, the log and progress warnings show it. */
export interface Mismatch {
  /** `db.collection`. */
  namespace: string;
  /** The document's `_id` as relaxed Extended JSON; absent for a namespace-level difference (index, option, a missing collection). */
  _id?: unknown;
  kind: MismatchKind;
  /** What differs, in words (the field, the index, the option). */
  detail: string;
  /** When it was confirmed. */
  foundAt: Date;
}

/** `GET /api/v1/verification`. */
export interface VerificationReport {
  /** False when the sync runs without verification (`--disableVerification`, `verification: {enabled: false}`). */
  enabled: boolean;
  /**
   * `pending`: not finished (still scanning, or following the clusters' changes until commit);
   * `clean`: finished after commit, no difference; `differences`: finished, differences found.
   */
  outcome: 'pending' | 'clean' | 'differences';
  progress: VerificationProgress | null;
  /** `_id` ranges scanned on both clusters, of all planned. */
  partitions: { total: number; scanned: number };
  /** Documents waiting to be checked again (changed since their range was scanned, or found different once). */
  pendingRechecks: number;
  /** Documents changed on the source after the commit point, or on the destination after commit: not verifiable. */
  notVerified: number;
  /** Differences known now. */
  mismatchCount: number;
  /** The first `limit` of them (by namespace, then `_id`), after `skip`. */
  mismatches: Mismatch[];
  /** The commit was requested while differences were known (it goes ahead: the spec's commit is not the verifier's to refuse). */
  committedWithDifferences: boolean;
  /** When the final pass after commit finished; null before. */
  completedAt: Date | null;
}
