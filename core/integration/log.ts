/**
 * The integrations' log (CloudWatch in AWS, stdout locally): what happened to a grant (connect, callback, refresh) and
 * which provider calls failed, for whoever investigates a broken integration. Only kinds, workspace ids, outcomes,
 * OAuth error codes, HTTP statuses and the ports' failure messages are written: never a token, an authorization code,
 * a PKCE verifier, a client secret or a provider's response body (test/http/integrations-logs.test.ts reads the log
 * lines of every kind's flows for them).
 */
import type { Logger } from "@aws-lambda-powertools/logger";
import * as oauth from "oauth4webapi";
import { serviceLog } from "../log";
import { ProviderError } from "./errors";
import type { IntegrationKind } from "./schema";

/** The integrations' logger, created on first use at LOG_LEVEL (tests raise its level to read what it writes). */
export const integrationLog = (): Logger => serviceLog();

/**
 * What an OAuth failure may say in the log: the provider's error code (RFC 6749 `error`, e.g. invalid_grant) and the
 * HTTP status, or the error's class. Not its message or cause: oauth4webapi keeps the whole response there.
 */
export function oauthFailure(err: unknown): { provider_error: string; status?: number } {
  if (err instanceof oauth.ResponseBodyError) return { provider_error: err.error, status: err.status };
  const answered = oauthErrorInBody(err);
  if (answered) return { provider_error: answered };
  if (err instanceof oauth.AuthorizationResponseError) return { provider_error: err.error };
  if (err instanceof oauth.WWWAuthenticateChallengeError) return { provider_error: "www_authenticate_challenge", status: err.status };
  if (err instanceof oauth.OperationProcessingError) return { provider_error: err.code ?? err.name };
  return { provider_error: err instanceof Error ? err.name : "unknown" };
}

/**
 * The OAuth error code of a token endpoint that answered 200 with an `error` field (GitHub does so for every token
 * error, e.g. `bad_refresh_token`): oauth4webapi then fails on the missing access token and keeps the body as the
 * cause. Only the code is read from it.
 */
export function oauthErrorInBody(err: unknown): string | undefined {
  if (!(err instanceof oauth.OperationProcessingError)) return undefined;
  const code = (err.cause as { body?: { error?: unknown } } | undefined)?.body?.error;
  return typeof code === "string" && /^[a-z_]{1,64}$/.test(code) ? code : undefined;
}

/** A provider call that failed (the ports' `ProviderError`), at warn level; anything else is its caller's to log. */
export function logProviderFailure(kind: IntegrationKind, workspaceId: string, err: unknown): void {
  if (!(err instanceof ProviderError)) return;
  integrationLog().warn("integration provider call failed", {
    kind,
    workspace_id: workspaceId,
    failure: err.failure,
    detail: err.message,
    ...(err.retryAfterSeconds !== undefined ? { retry_after_seconds: err.retryAfterSeconds } : {}),
  });
}
