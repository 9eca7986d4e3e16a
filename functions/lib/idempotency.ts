/**
 * `Idempotency-Key` on the routes that run charged AI work (RouteSpec.idempotent): synthesis, recommendation
 * generation, drafting, block actions. A client that lost an answer (a timeout, a dropped connection) retries with
 * the same key and gets the first answer, not a second run charged again. The spec has no such header; this follows
 * the IETF draft (draft-ietf-httpapi-idempotency-key-header) as Stripe does, through Powertools for AWS Lambda's
 * idempotency utility on the service's one table (docs/decisions.md "Idempotency-Key on the charged AI routes").
 *
 * - A key is 1 to 255 printable ASCII characters, scoped to the caller and the route: two users, or one user's two
 *   routes, never share an answer. Kept 24 hours.
 * - The first request with a key runs; its 2xx answer is stored, with the workspaces whose membership it verified. A
 *   later request with the key and the same path, query and body gets that answer again, with
 *   `idempotent-replayed: true`, and runs nothing (no rate limit, no plan gate, no charge) but the membership check of
 *   each of those workspaces: a member removed since gets the route's 403 (404 on a route naming a resource alone),
 *   not the answer. The caller's own status (deleted, suspended, product access) is checked before, as on any request.
 * - While the first request runs, another with the key answers 409 CONFLICT (Retry-After). If the first fails (a 4xx
 *   or 5xx), nothing is stored and a retry runs again; it answers its own error even when its in-progress record
 *   could not be deleted (then the key waits as below). If its Lambda died mid-run, a retry runs again once the
 *   Lambda's time is over (the in-progress record expires with the invocation's remaining time).
 * - The key sent with another path, query or body answers 422 VALIDATION_ERROR.
 * - An answer over STORED_ANSWER_MAX_BYTES is not kept whole: a replay answers 409 CONFLICT (`idempotency:
 *   "answer_not_kept"`) saying the request succeeded and where to read its result (a DynamoDB item holds 400 KB).
 *   A first request whose answer could not be stored still gets its answer.
 * - The records live in their caller's partition (`idempotencyPartitionOf`, core/user), not one for all, and the
 *   caller's account deletion deletes them.
 */
import type { Context } from "aws-lambda";
import {
  IdempotencyAlreadyInProgressError,
  IdempotencyConfig,
  IdempotencyPersistenceLayerError,
  IdempotencyValidationError,
  makeIdempotent,
} from "@aws-lambda-powertools/idempotency";
import { DynamoDBPersistenceLayer } from "@aws-lambda-powertools/idempotency/dynamodb";
import { AppError, Errors } from "../../core/error";
import { Config } from "../../core/config";
import { requestScope } from "../../core/context";
import { dynamoBaseClient } from "../../core/db/client";
import { TABLE_KEYS } from "../../core/db/table";
import { serviceLog } from "../../core/log";
import { idempotencyPartitionOf } from "../../core/user";
import { requireMember, requireResourceMember } from "../../core/workspace";
import type { Reply, RouteSpec } from "./route";

const logger = serviceLog("idempotency");

/** How long an answer is kept for replays: 24 hours, as Stripe keeps keys. */
export const IDEMPOTENCY_TTL_SECONDS = 24 * 3600;
/** The largest stored answer (UTF-8 bytes of its JSON): under DynamoDB's 400 KB item with the record's other fields. */
export const STORED_ANSWER_MAX_BYTES = 350_000;
/**
 * Off Lambda (the embedded runtime) nothing ends a request at its context's deadline, so a run in progress keeps its
 * key for at least this long (ms): Lambda's longest invocation, 15 minutes.
 */
const OFF_LAMBDA_IN_PROGRESS_MS = 15 * 60_000;
/** What a request that meets its key's first request still running is told to wait (seconds). */
const IN_PROGRESS_RETRY_AFTER_SECONDS = 5;
const KEY_RE = /^[\x20-\x7e]{1,255}$/;

/**
 * A persistence layer for one request: its partition is the caller's (`staticPkValue` is fixed per layer) and the
 * library keeps the route's key prefix and the config on the layer, so a layer shared by concurrent requests would
 * mix them. Building one is cheap (no client of its own; the user-agent middleware is added to the shared client once).
 */
function storeFor(userId: string): DynamoDBPersistenceLayer {
  return new DynamoDBPersistenceLayer({
    tableName: Config.tableName(),
    awsSdkV3Client: dynamoBaseClient(),
    keyAttr: TABLE_KEYS.partitionKey,
    sortKeyAttr: TABLE_KEYS.sortKey,
    staticPkValue: idempotencyPartitionOf(userId),
    // The table's TTL attribute: DynamoDB removes a record once its 24 hours are over.
    expiryAttr: TABLE_KEYS.ttlAttribute,
  });
}

/**
 * What is stored for a replay: the first answer, or only its status when it was too large to keep; with the
 * workspaces whose membership the first request verified, checked again on each replay.
 */
type StoredAnswer = ({ status: number; body?: unknown; headers?: Record<string, string> } | { status: number; too_large: true }) & { workspaces: string[] };

/**
 * What a route answers a caller who is not a member of its workspace, which a replay answers too: for a route naming
 * a resource alone (`workspaceScope: "resource"`) the 404 of an id that does not exist, naming the resource of its
 * path's id parameter (`/api/blocks/{block_id}/expand`: "Block not found"); undefined for the others' 403.
 */
function resourceNamed(route: Pick<RouteSpec, "workspaceScope" | "path">): string | undefined {
  if (route.workspaceScope !== "resource") return undefined;
  // `{block_id}` names a block; `/api/documents/{id}` a document.
  const named = /\{([a-z]+)_id\}/.exec(route.path)?.[1] ?? /\/([a-z]+?)s?\/\{id\}/.exec(route.path)?.[1] ?? "resource";
  return named.charAt(0).toUpperCase() + named.slice(1);
}

/** The workspaces whose membership of `userId` this request verified (core/context.ts keys them `${userId}#${workspaceId}`). */
function verifiedWorkspaces(userId: string): string[] {
  const prefix = `${userId}#`;
  return [...(requestScope()?.memberships.keys() ?? [])].filter((k) => k.startsWith(prefix)).map((k) => k.slice(prefix.length));
}

/**
 * Check again, one consistent read each, that the caller is still a member of every workspace the first request was
 * let into: a stored answer is no way around a removal (or a deleted workspace).
 * @param resource the resource a non-member is told was not found (`resourceNamed`); none: 403
 * @throws AppError FORBIDDEN (403), or NOT_FOUND (404) with `resource`, when a membership is gone
 */
async function recheckMemberships(userId: string, workspaces: string[], resource: string | undefined): Promise<void> {
  await Promise.all(workspaces.map((ws) => (resource ? requireResourceMember(userId, ws, resource) : requireMember(userId, ws))));
}

/**
 * Run `work` once per (route, caller, key): the first request runs it and its answer is kept; a retry gets the kept
 * answer. See the module comment for the rules.
 * Call it inside the request's scope (core/context.ts `withRequestScope`), after the caller's authentication: the
 * memberships `work` verifies there are what a replay checks again.
 * @param routeId the route's id (functions/http/routes.ts), which scopes the key with `userId`
 * @param userId the authenticated caller: the records' partition (`idempotencyPartitionOf`)
 * @param key the request's `Idempotency-Key` header as sent
 * @param request what must be the same on a retry (path parameters, query, body)
 * @param context the invocation's context: a run in progress blocks retries for the invocation's remaining time
 * @param work the request's checks and implementation; only a reply it returns is kept (a thrown error is not)
 * @param route the route's spec: how a replay answers a caller who is no longer a member (`resourceNamed`)
 * @returns the fresh reply, or the first request's reply with `idempotent-replayed: true`
 * @throws AppError CONFLICT (409) while the first request runs, or when its answer was too large to keep;
 *   VALIDATION_ERROR (422) for a key that is empty, over 255 characters or not printable ASCII, or that came with
 *   another request; on a replay, FORBIDDEN (403) or NOT_FOUND (404) when the caller is no longer a member of a
 *   workspace the first request verified; whatever `work` throws
 */
export async function runOncePerKey(routeId: string, userId: string, key: string, request: unknown, context: Context, work: () => Promise<Reply>, route: Pick<RouteSpec, "workspaceScope" | "path">): Promise<Reply> {
  if (!KEY_RE.test(key)) {
    throw Errors.validation([{ loc: ["header", "Idempotency-Key"], msg: "An Idempotency-Key is 1 to 255 printable ASCII characters", type: "idempotency_key" }]);
  }
  let fresh: Reply | undefined;
  // What the work itself threw: the library may report a failed cleanup in its place (below).
  let failed: { error: unknown } | undefined;
  const once = makeIdempotent(
    async (_payload: { key: unknown; request: unknown }): Promise<StoredAnswer> => {
      let reply: Reply;
      try {
        reply = await work();
      } catch (error) {
        failed = { error };
        throw error;
      }
      fresh = reply;
      const workspaces = verifiedWorkspaces(userId);
      // Plain JSON, as a replay will read it back (no undefined, dates as strings), measured in the bytes DynamoDB counts.
      const json = JSON.stringify({ status: reply.status ?? 200, body: reply.body, ...(reply.headers ? { headers: reply.headers } : {}), workspaces });
      return Buffer.byteLength(json, "utf8") > STORED_ANSWER_MAX_BYTES ? { status: reply.status ?? 200, too_large: true, workspaces } : (JSON.parse(json) as StoredAnswer);
    },
    {
      persistenceStore: storeFor(userId),
      keyPrefix: routeId,
      // Per request: the in-progress record lives as long as this invocation can (its remaining time).
      config: new IdempotencyConfig({ eventKeyJmesPath: "key", payloadValidationJmesPath: "request", expiresAfterSeconds: IDEMPOTENCY_TTL_SECONDS, lambdaContext: inProgressContext(context) }),
    },
  );
  let answer: StoredAnswer;
  try {
    // JSON round trip: the hashed payload is what the validator compares, so it must be plain data.
    answer = await once({ key: { user: userId, key }, request: JSON.parse(JSON.stringify(request ?? null)) });
  } catch (err) {
    // The work ran and answered, only its answer could not be kept (the store busy or refusing the item): the client
    // gets it all the same. Its key stays in progress until the invocation's time is over, then a retry runs again.
    if (fresh && err instanceof IdempotencyPersistenceLayerError) {
      logger.warn("an answer could not be kept for its Idempotency-Key", { route: routeId, error: err });
      return fresh;
    }
    // The work failed and the library could not delete the in-progress record after it (the store busy): the library
    // reports that failure instead, but the client's answer is the work's own error (its 402, not a 500). The key stays
    // in progress until the invocation's time is over, as for a Lambda that died mid-run.
    if (failed && err instanceof IdempotencyPersistenceLayerError) {
      logger.warn("a failed request's Idempotency-Key could not be released", { route: routeId, error: err });
      throw failed.error;
    }
    throw translate(err);
  }
  if (fresh) return fresh;
  // A replay: the answer is given only to a caller still let in where the first request was.
  await recheckMemberships(userId, answer.workspaces, resourceNamed(route));
  if ("too_large" in answer) {
    throw new AppError("CONFLICT", "The request with this Idempotency-Key succeeded, but its answer was too large to keep: read its result from the resource it created or changed", { idempotency: "answer_not_kept" });
  }
  return { status: answer.status, body: answer.body, headers: { ...(answer.headers ?? {}), "idempotent-replayed": "true" } };
}

/**
 * The context whose remaining time bounds a run in progress. In Lambda, the invocation's own: Lambda ends it then.
 * Off Lambda nothing ends it, so at least OFF_LAMBDA_IN_PROGRESS_MS: a retry must not run a second copy of a slow
 * run that is still going.
 */
function inProgressContext(context: Context): Context {
  if (process.env.AWS_LAMBDA_FUNCTION_NAME) return context;
  return { ...context, getRemainingTimeInMillis: () => Math.max(context.getRemainingTimeInMillis?.() ?? 0, OFF_LAMBDA_IN_PROGRESS_MS) };
}

/** The library's refusals as the service's errors; a persistence failure as the DynamoDB error under it. */
function translate(err: unknown): unknown {
  if (err instanceof IdempotencyAlreadyInProgressError) {
    return new AppError("CONFLICT", "A request with this Idempotency-Key is still running: retry when it has answered", { idempotency: "in_progress", retry_after_seconds: IN_PROGRESS_RETRY_AFTER_SECONDS });
  }
  if (err instanceof IdempotencyValidationError) {
    return Errors.validation([{ loc: ["header", "Idempotency-Key"], msg: "This Idempotency-Key was used with another request: send a new key for a new request", type: "idempotency_key_reused" }]);
  }
  if (err instanceof IdempotencyPersistenceLayerError && err.cause instanceof Error) return err.cause;
  return err;
}
