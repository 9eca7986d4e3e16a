/**
 * The extraction log. Failure reasons are written for users and never carry a parser's own words; those words,
 * with the figures behind a refusal, go here for whoever investigates (CloudWatch in AWS, stdout locally).
 */
import { serviceLog } from "../log";

/**
 * Log why an extraction failed, at warn level: `message` says what happened, `details` the figures or the part of
 * the file, `cause` the underlying error (logged with its stack). Created on first use, so importing core/extract
 * for validation alone costs nothing.
 */
export function logExtractionFailure(message: string, details: Record<string, unknown> = {}, cause?: unknown): void {
  const error = cause === undefined ? undefined : cause instanceof Error ? cause : new Error(String(cause));
  serviceLog().warn(message, error ? { ...details, error } : details);
}
