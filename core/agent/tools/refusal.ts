import { AppError, type ErrorCode } from "../../error";

/** A tool's answer to a call it could not carry out (spec 02: "Tool failures return {success: false, error, error_code}"). */
export type ToolFailure = { success: false; error: string; error_code: string; [field: string]: unknown };

/**
 * A gated tool's refusal at preview, before anything is queued: an AppError with the code of `http`, what the same
 * refusal is over HTTP (SERVICE_UNAVAILABLE when that is no AppError), so a caller outside the agent loop reads it as
 * before; its `extra` is the tool failure's `error_code` and its other fields (`retry_after`, `selected_repos`, ...).
 * The agent loop answers the model with `toolFailureOf(err)`.
 */
export function refusal(http: unknown, { success: _success, error, ...fields }: ToolFailure): AppError {
  const code: ErrorCode = http instanceof AppError ? http.code : "SERVICE_UNAVAILABLE";
  return new AppError(code, error, fields);
}

/**
 * The spec's tool failure an error carries: an AppError with a string `error_code` in its `extra` (a `refusal`) as
 * `{success: false, error, error_code, ...its other fields}`; undefined for any other error.
 */
export function toolFailureOf(err: unknown): ToolFailure | undefined {
  if (!(err instanceof AppError) || typeof err.extra.error_code !== "string") return undefined;
  return { ...err.extra, success: false, error: err.message, error_code: err.extra.error_code };
}
