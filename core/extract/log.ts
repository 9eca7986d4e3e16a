/**
 * The extraction log. Failure reasons are written for users and never carry a parser's own words; those words,
 * with the figures behind a refusal, go here for whoever investigates (CloudWatch in AWS, stdout locally).
 */
import { Logger } from "@aws-lambda-powertools/logger";
import { Config } from "../config";

let logger: Logger | undefined;

/**
 * Log why an extraction failed, at warn level: `message` says what happened, `details` the figures or the part of
 * the file, `cause` the underlying error (logged with its stack). Created on first use, so importing core/extract
 * for validation alone costs nothing.
 */
export function logExtractionFailure(message: string, details: Record<string, unknown> = {}, cause?: unknown): void {
  logger ??= new Logger({ serviceName: "research-to-delivery", logLevel: Config.logLevel() as "INFO" });
  const error = cause === undefined ? undefined : cause instanceof Error ? cause : new Error(String(cause));
  logger.warn(message, error ? { ...details, error } : details);
}
