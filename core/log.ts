/**
 * The service's structured log (Powertools Logger: JSON lines to CloudWatch in AWS, to stdout on the embedded
 * runtime), one logger per service name, created on first use at LOG_LEVEL (`Config.logLevel`), so a module that
 * only might log costs nothing at import.
 */
import { Logger } from "@aws-lambda-powertools/logger";
import { Config } from "./config";

const loggers = new Map<string, Logger>();

/**
 * The logger of a service name (default "research-to-delivery", the service's own), shared by every module that
 * logs under that name (tests raise or lower its level to read what it writes).
 */
export function serviceLog(serviceName = "research-to-delivery"): Logger {
  let logger = loggers.get(serviceName);
  if (!logger) loggers.set(serviceName, (logger = new Logger({ serviceName, logLevel: Config.logLevel() as "INFO" })));
  return logger;
}
