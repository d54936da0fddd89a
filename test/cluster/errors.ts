/**
 * Server errors with mongod's codes and code names (src/mongo/base/error_codes.yml).
 * A command that throws one of these replies `{ok: 0, errmsg, code, codeName, ...extra}`.
 */

/** The subset of mongod's error codes the test cluster returns, by code name. */
export const ErrorCode = {
  InternalError: 1,
  BadValue: 2,
  GraphContainsCycle: 5,
  FailedToParse: 9,
  UserNotFound: 11,
  Unauthorized: 13,
  TypeMismatch: 14,
  Overflow: 15,
  InvalidLength: 16,
  ProtocolError: 17,
  AuthenticationFailed: 18,
  IllegalOperation: 20,
  InvalidBSON: 22,
  NamespaceNotFound: 26,
  IndexNotFound: 27,
  RoleNotFound: 31,
  PathNotViable: 28,
  NonExistentPath: 29,
  InvalidPath: 30,
  CannotBackfillArray: 34,
  ConflictingUpdateOperators: 40,
  CursorNotFound: 43,
  NoMatchingDocument: 47,
  NamespaceExists: 48,
  MaxTimeMSExpired: 50,
  DollarPrefixedFieldName: 52,
  InvalidIdField: 53,
  NotSingleValueField: 54,
  InvalidDBRef: 55,
  EmptyFieldName: 56,
  CommandNotFound: 59,
  ImmutableField: 66,
  CannotCreateIndex: 67,
  IndexAlreadyExists: 68,
  InvalidOptions: 72,
  InvalidNamespace: 73,
  ShutdownInProgress: 91,
  IndexOptionsConflict: 85,
  IndexKeySpecsConflict: 86,
  OperationFailed: 96,
  NotExactValueField: 111,
  WriteConflict: 112,
  CommandNotSupported: 115,
  DocTooLargeForCapped: 116,
  ConflictingOperationInProgress: 117,
  DocumentValidationFailure: 121,
  CommandFailed: 125,
  CappedPositionLost: 136,
  CommandNotSupportedOnView: 166,
  OptionNotSupportedOnView: 167,
  InvalidPipelineOperator: 168,
  CannotIndexParallelArrays: 171,
  QueryPlanKilled: 175,
  AmbiguousIndexKeyPattern: 181,
  InvalidViewDefinition: 182,
  InvalidIndexSpecificationOption: 197,
  CannotBuildIndexKeys: 201,
  NoSuchSession: 206,
  InvalidUUID: 207,
  IllegalOpMsgFlag: 223,
  QueryFeatureNotAllowed: 224,
  IncompleteTransactionHistory: 217,
  TransactionTooOld: 225,
  TooManyDocumentSequences: 233,
  CursorKilled: 237,
  NotImplemented: 238,
  NoSuchTransaction: 251,
  TransactionCommitted: 256,
  InvalidResumeToken: 260,
  OperationNotSupportedInTransaction: 263,
  ChangeStreamFatalError: 280,
  ChangeStreamHistoryLost: 286,
  ChecksumMismatch: 288,
  NoQueryExecutionPlans: 291,
  QueryExceededMemoryLimitNoDiskUseAllowed: 292,
  MechanismUnavailable: 334,
  UnsupportedOpQueryCommand: 352,
  CannotConvertIndexToUnique: 359,
  UserWritesBlocked: 371,
  CannotGrowDocumentInCappedNamespace: 10003,
  NotWritablePrimary: 10107,
  BSONObjectTooLarge: 10334,
  DuplicateKey: 11000,
  IDLDuplicateField: 40413,
  IDLFailedToParse: 40414,
  IDLUnknownField: 40415,
} as const;

export type ErrorCodeName = keyof typeof ErrorCode;

const nameByCode = new Map<number, string>(Object.entries(ErrorCode).map(([name, code]) => [code, name]));

/** The code name mongod reports for a code (`Location<code>` for codes without a name). */
export function codeNameOf(code: number): string {
  return nameByCode.get(code) ?? `Location${code}`;
}

/** An error a command reports to the client; `extra` fields are merged into the reply. */
export class ServerError extends Error {
  readonly code: number;
  readonly codeName: string;
  readonly extra: Record<string, unknown>;
  /** Error labels such as `TransientTransactionError` or `NonResumableChangeStreamError`. */
  readonly labels: string[];

  constructor(codeName: ErrorCodeName | number, message: string, extra: Record<string, unknown> = {}, labels: string[] = []) {
    super(message);
    this.name = 'ServerError';
    this.code = typeof codeName === 'number' ? codeName : ErrorCode[codeName];
    this.codeName = codeNameOf(this.code);
    this.extra = extra;
    this.labels = labels;
  }

  /** The `{ok: 0, ...}` reply body for this error. */
  toReply(): Record<string, unknown> {
    const reply: Record<string, unknown> = {
      ok: 0,
      errmsg: this.message,
      code: this.code,
      codeName: this.codeName,
      ...this.extra,
    };
    if (this.labels.length > 0) reply.errorLabels = this.labels;
    return reply;
  }
}

/** Shorthand for the most common failure: a command argument of the wrong shape. */
export function badValue(message: string): ServerError {
  return new ServerError('BadValue', message);
}

/** mongod's IDL-style type error: `BSON field 'find.limit' is the wrong type 'string', expected types '[long, int, decimal, double]'` */
export function wrongType(field: string, actual: string, expected: string): ServerError {
  return new ServerError('TypeMismatch', `BSON field '${field}' is the wrong type '${actual}', expected type '${expected}'`);
}
