import { AppError } from "../error";
import { logExtractionFailure } from "./log";

/**
 * Why an extraction failed, stable and machine-readable, so callers (the extraction state machine's MarkFailed step,
 * the reprocess endpoint) can record it next to the human message and decide what to show.
 *
 * - `corrupt`: the file could not be parsed (truncated, damaged, not really the format it claims).
 * - `encrypted`: the file is password-protected.
 * - `no_text`: the file parsed but contains no text (blank scan, silent recording, empty sheet).
 * - `engine_missing`: a local engine (ffmpeg, pocketsphinx) is not installed on this machine.
 * - `engine_failed`: an engine crashed or timed out on this file.
 * - `service_rejected`: an AWS engine (Textract, Transcribe) refused the file.
 * - `too_large`: the file is over a resource limit (core/extract/limits.ts): a DOCX/XLSX archive with too many
 *   entries, unpacking to too much or at a zip bomb's ratio, or any file yielding more text than we keep.
 */
export type ExtractionFailure = "corrupt" | "encrypted" | "no_text" | "engine_missing" | "engine_failed" | "service_rejected" | "too_large";

/**
 * A failed extraction with a reason a user can act on (spec 01 Research source processing: pending -> failed).
 *
 * Code: `VALIDATION_ERROR` (422) when the file itself is the problem, `SERVICE_UNAVAILABLE` (503) when an engine is
 * missing or broken on our side, so an HTTP caller that surfaces it gets a truthful status. `extra.reason` carries
 * the {@link ExtractionFailure}. The `name` is "ExtractionError", which is not in the state machine's Retry list,
 * so Step Functions sends it straight to MarkFailed instead of retrying a file that will never parse.
 */
export class ExtractionError extends AppError {
  override readonly name = "ExtractionError";
  readonly reason: ExtractionFailure;

  constructor(reason: ExtractionFailure, message: string, options: { cause?: unknown } = {}) {
    super(reason === "engine_missing" || reason === "engine_failed" ? "SERVICE_UNAVAILABLE" : "VALIDATION_ERROR", message, {
      reason,
    });
    this.reason = reason;
    if (options.cause !== undefined) (this as { cause?: unknown }).cause = options.cause;
  }
}

/**
 * A parser could not read the file: an ExtractionError with `message` alone, written for the user, while the
 * parser's own error (library text, offsets, stack) goes to the extraction log with `details`, never into the reason.
 */
export function unreadable(message: string, cause: unknown, details: Record<string, unknown> = {}, reason: ExtractionFailure = "corrupt"): ExtractionError {
  logExtractionFailure(message, details, cause);
  return new ExtractionError(reason, message, { cause });
}

/** The message of an unknown thrown value, for embedding an engine's own words in a user-facing reason. */
export const messageOf = (err: unknown): string => {
  if (err instanceof Error) return err.message;
  if (typeof err === "string") return err;
  try {
    return JSON.stringify(err);
  } catch {
    return String(err);
  }
};

/**
 * Error names AWS uses for throttling. The extraction state machine retries these by name
 * (functions/steps/extraction.asl.ts), so adapters must re-throw them unchanged, never wrapped.
 */
export const THROTTLING_ERRORS: ReadonlySet<string> = new Set([
  "ThrottlingException",
  "ProvisionedThroughputExceededException",
  "LimitExceededException",
  "TooManyRequestsException",
]);

/** True for an AWS throttling error (by `name`, which is what Step Functions matches on). */
export const isThrottling = (err: unknown): boolean => err instanceof Error && THROTTLING_ERRORS.has(err.name);
