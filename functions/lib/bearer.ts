/**
 * The 401 of a request whose bearer token is missing or refused, and its RFC 6750 challenge: what the error middleware
 * of every Lambda needs (functions/lib/http.ts), without the JWT library that verifies tokens (functions/lib/auth.ts,
 * loaded only when a route that authenticates is first reached).
 */
import { AppError } from "../../core/error";

/** The protection space named in every `WWW-Authenticate` challenge (RFC 6750 section 3). */
const REALM = "research-to-delivery";

/**
 * A 401 that knows its RFC 6750 challenge: `error` names what was wrong with the bearer token, and is absent when
 * the request carried no bearer token at all (section 3.1: then the challenge names only the realm).
 */
export class BearerError extends AppError {
  constructor(
    message: string,
    readonly error?: "invalid_token" | "invalid_request",
  ) {
    super("UNAUTHORIZED", message);
  }
}

/** RFC 6750 quoted strings of `error_description` allow printable ASCII except `"` and `\`. */
const quotable = (text: string) => text.replace(/[^\x20-\x21\x23-\x5B\x5D-\x7E]/g, "");

/**
 * The `WWW-Authenticate` header of a 401 (RFC 6750 section 3), for the error middleware: `Bearer realm="..."`, plus
 * `error` and `error_description` (the response's fixed `detail`) when a token was sent. A 401 that is not a
 * BearerError (e.g. a verified token that names no user we can create) is an invalid token.
 */
export function wwwAuthenticate(err: AppError): string {
  const error = err instanceof BearerError ? err.error : "invalid_token";
  if (!error) return `Bearer realm="${REALM}"`;
  return `Bearer realm="${REALM}", error="${error}", error_description="${quotable(err.message)}"`;
}
