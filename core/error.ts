/**
 * One error type for the whole service (DESIGN.md section 4.5). A `code` is stable and machine-readable;
 * its HTTP status comes from the single map below, never from the throw site.
 */
export const ERROR_STATUS = {
  BAD_REQUEST: 400,
  EMPTY_FILE: 400,
  BLOCKED_FILE_TYPE: 400,
  FILE_TYPE_MISMATCH: 400,
  INVALID_ACCESS_CODE: 400,
  INVALID_SIGNATURE: 400,
  UNAUTHORIZED: 401,
  USAGE_LIMIT_EXCEEDED: 402,
  SUBSCRIPTION_REQUIRED: 402,
  FORBIDDEN: 403,
  PRODUCT_ACCESS_REQUIRED: 403,
  NOT_FOUND: 404,
  USER_NOT_FOUND: 404,
  /** Push or sync with no active integration of the platform (spec 02 Errors). */
  NO_ACTIVE_INTEGRATION: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  INVALID_STATE: 409,
  ACCESS_CODE_REDEEMED: 409,
  ALREADY_ACTIVE: 409,
  ALREADY_MEMBER: 409,
  SYNTHESIS_IN_PROGRESS: 409,
  REQUEST_TIMEOUT: 408,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  VALIDATION_ERROR: 422,
  ALREADY_PROCESSED: 422,
  SOURCE_NOT_READY: 422,
  INVALID_TRANSITION: 422,
  REPO_NOT_SELECTED: 422,
  NO_TEAM_SELECTED: 422,
  CODEHOST_TOKEN_ERROR: 424,
  /** The other providers' equivalents of CODEHOST_TOKEN_ERROR: the grant expired or was revoked; reconnect. */
  PLANNER_TOKEN_ERROR: 424,
  TICKETS_TOKEN_ERROR: 424,
  FILESTORE_TOKEN_ERROR: 424,
  RATE_LIMITED: 429,
  /** Answered by the gateway (API Gateway, or the local one) before any handler: request line and headers too large. */
  REQUEST_HEADERS_TOO_LARGE: 431,
  INTERNAL: 500,
  INVARIANT_VIOLATION: 500,
  SERVICE_UNAVAILABLE: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** One field-level validation problem, as in the 422 envelope of DESIGN.md section 5. */
export interface FieldError {
  loc: (string | number)[];
  msg: string;
  type: string;
}

/**
 * A failure the caller can act on. `extra` fields are merged into the envelope
 * (e.g. `valid_transitions` for INVALID_TRANSITION, `source_ids` for SOURCE_NOT_READY).
 */
export class AppError extends Error {
  /** A stable name, so a Step Functions Catch (which sees only the name) can tell our errors from defects. */
  override name = "AppError";
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
    this.status = ERROR_STATUS[code];
  }
}

/** Shorthand constructors for the common cases. */
export const Errors = {
  notFound: (what: string) => new AppError("NOT_FOUND", `${what} not found`),
  forbidden: (message = "You are not a member of this workspace") => new AppError("FORBIDDEN", message),
  unauthorized: (message: string) => new AppError("UNAUTHORIZED", message),
  validation: (errors: FieldError[], message = "Request validation failed") =>
    new AppError("VALIDATION_ERROR", message, { errors }),
  /**
   * 422 naming the ids a body references that are not `kind`s of the caller's workspace (the one answer for every
   * reference check: insights of a recommendation or a draft, sources attached to a chat).
   * @param field the body field that holds the ids
   */
  unknownIds: (kind: string, field: string, ids: string[]) =>
    new AppError("VALIDATION_ERROR", `Unknown ${kind} ids for this workspace: ${ids.join(", ")}`, {
      errors: ids.map((id) => ({ loc: ["body", field], msg: `${kind} ${id} is not in this workspace`, type: "unknown_id" })),
    }),
};
