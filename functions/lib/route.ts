import type { z } from "zod";
import type { APIGatewayProxyEventV2 } from "aws-lambda";
import type { RateLimitName } from "../../core/config";
import type { ErrorCode } from "../../core/error";
import type { User } from "../../core/user";
import type { TokenClaims } from "../../core/user/schema";
import { MULTIPART_MAX_BYTES } from "../../core/research/limits";
import type { PlanFeature, PlanUsage } from "../../core/billing/gates";
import type { RouteCountedUsage } from "../../core/billing/usage-counters";

export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

/**
 * Who may call a route: `user` (bearer JWT), `admin` (JWT of an admin, DESIGN.md section 5),
 * `public` (no token), `webhook` (no token; the handler verifies the provider's signature).
 */
export type Access = "user" | "admin" | "public" | "webhook";

/** Where a workspace-scoped route finds its workspace id (used by the membership tests and the docs). */
export type WorkspaceScope = "path" | "query" | "body" | "resource";

type AnyObject = z.ZodType<Record<string, unknown>>;

/** One row of the route table (functions/http/routes.ts). */
export interface RouteSpec {
  method: Method;
  /** API Gateway path with `{param}` segments. */
  path: string;
  /** Endpoint group: one Lambda per group (functions/http/<group>.ts). */
  group: string;
  summary: string;
  access: Access;
  /** How the workspace is found for the membership check, when the route is workspace-scoped. */
  workspaceScope?: WorkspaceScope;
  params?: AnyObject;
  query?: AnyObject;
  body?: z.ZodType;
  /** Body encoding: json (default when body is set), multipart (uploads), raw (signed webhooks). */
  bodyType?: "json" | "multipart" | "raw";
  /** Response schemas by status; `null` is a response without content (204). */
  responses: Record<number, z.ZodType | null>;
  /** Content type of a non-JSON success response (docs page, `text/event-stream`). */
  produces?: string;
  /**
   * A response-streaming route (SSE, DESIGN.md 6.1): its group is a streaming Lambda on a Function URL in
   * RESPONSE_STREAM mode (API Gateway cannot stream), served by the local gateway as it is produced.
   */
  streaming?: boolean;
  /** Largest request body in bytes (413 above it); the default comes from `bodyType`, see {@link bodyLimitOf}. */
  bodyLimit?: number;
  /** What to do instead when a body is over the limit, added to the 413's detail (uploads: the upload-url route). */
  bodyLimitHint?: string;
  /**
   * A per-user rate limit (core/rate-limit, Config.rateLimit): each valid request of the caller counts against it
   * before the implementation runs, and the 429 (with Retry-After) is documented. Declared here, not called in the
   * implementation, so the copilot's own tool calls into the same core operations do not use up the user's requests.
   */
  rateLimit?: RateLimitName;
  /** A suspended account may still call it (its own profile); every other user route answers it 403. */
  allowSuspended?: boolean;
  /**
   * A user without product access (pending, not a founder) may call it: their profile, redeeming a code, the plans.
   * Every other user route answers such a user 403 PRODUCT_ACCESS_REQUIRED (spec 01 User: has_product_access "gates
   * workspace creation and product use"), whatever workspace they were added to.
   */
  allowWithoutProductAccess?: boolean;
  /**
   * The error codes the route's own logic can answer with (plan gates, conflicts, rate limits, file checks), beyond
   * those its access, parameters and body imply; the OpenAPI document lists them all (see {@link errorCodesOf}).
   */
  errors?: readonly ErrorCode[];
  /**
   * require_feature (spec 02 Limits: Plans): the plan covering the request (the workspace owner's; the caller's own
   * without a workspace) must have this flag, else 403 FORBIDDEN with `feature`, `plan`, `required_plan`. Checked after validation and the
   * membership check, before the implementation. `when` limits it to the requests it applies to (enabling a setting).
   */
  feature?: PlanFeature | { flag: PlanFeature; when: (ctx: { body: unknown; query: unknown; params: unknown }) => boolean };
  /** require_usage (spec 02 Limits: Plans): the plan's limit must have room for one more, else 402 USAGE_LIMIT_EXCEEDED. */
  usage?: PlanUsage;
  /**
   * Usage the route counts (spec 02 "Usage types on the dashboard"): each 2xx answer counts one in the workspace it
   * names (core/billing/usage-counters.ts), after the implementation ran; a refused request counts nothing, and a count
   * that fails is logged, never the request's answer. Needs the workspace in the path, query or body.
   */
  counts?: RouteCountedUsage;
  /**
   * The workspace roles a gated route is for (owner/admin routes): checked with the membership before the plan gates,
   * so a member who may not call it gets 403 for the role, not a plan answer. The implementation checks them too.
   */
  roles?: readonly ("owner" | "admin" | "member")[];
  /**
   * Takes an `Idempotency-Key` header (functions/lib/idempotency.ts): a retry with the key gets the first request's
   * answer instead of a second run. For the routes that run charged AI work; never a streaming route.
   */
  idempotent?: boolean;
}

/**
 * The body limit of a JSON route unless it declares its own: Lambda's 6 MB invocation payload. API Gateway HTTP APIs
 * take 10 MB, but a Lambda proxy integration refuses an event over 6 MB, so 6 MB is what a deployed route can take;
 * the largest valid body (a document of 1,000,000 characters, up to 3 MB of UTF-8) fits.
 */
export const GATEWAY_MAX_BODY_BYTES = 6 * 1024 * 1024;
/** Room for the form's framing and text fields around the one file of an upload (boundaries, part headers, title). */
export const MULTIPART_FRAMING_BYTES = 64 * 1024;
/** Signed webhook events are small JSON documents; a larger body is refused before its signature is checked. */
export const WEBHOOK_MAX_BODY_BYTES = 256 * 1024;

/**
 * The largest request body a route takes, in bytes: its own `bodyLimit`, else by body type — an upload's one file of
 * MULTIPART_MAX_BYTES plus its framing, a signed webhook's WEBHOOK_MAX_BODY_BYTES, Lambda's 6 MB for the rest.
 * The local gateway refuses more before reading it, and the handler again (413 PAYLOAD_TOO_LARGE).
 */
export function bodyLimitOf(spec: Pick<RouteSpec, "bodyLimit" | "bodyType">): number {
  if (spec.bodyLimit !== undefined) return spec.bodyLimit;
  if (spec.bodyType === "multipart") return MULTIPART_MAX_BYTES + MULTIPART_FRAMING_BYTES;
  if (spec.bodyType === "raw") return WEBHOOK_MAX_BODY_BYTES;
  return GATEWAY_MAX_BODY_BYTES;
}

/**
 * Every error code a route can answer with, for its OpenAPI responses: what the middy stack derives from the route's
 * access (401; 403 for admins-only, workspace-scoped, suspended-account and no-product-access refusals), parameters (422, 404 for ids),
 * query (422), workspace scope (404 for a resource or a named id that is not there), body (422, 413) and rate limit
 * (429), plan gates (403 feature, 402 usage), plus the route's declared `errors`.
 */
export function errorCodesOf(spec: RouteSpec): ErrorCode[] {
  const codes: ErrorCode[] = [];
  if (spec.access === "user" || spec.access === "admin") {
    codes.push("UNAUTHORIZED");
    if (spec.access === "admin" || spec.workspaceScope || !spec.allowSuspended) codes.push("FORBIDDEN");
    if (spec.access === "user" && !spec.allowWithoutProductAccess) codes.push("PRODUCT_ACCESS_REQUIRED");
  }
  if (spec.access === "webhook") codes.push("INVALID_SIGNATURE", "BAD_REQUEST");
  if (spec.params || spec.workspaceScope) codes.push("NOT_FOUND");
  if (spec.params || spec.query || (spec.body && spec.bodyType !== "raw")) codes.push("VALIDATION_ERROR");
  if (spec.body) codes.push("PAYLOAD_TOO_LARGE");
  if (spec.rateLimit) codes.push("RATE_LIMITED");
  if (spec.feature) codes.push("FORBIDDEN");
  if (spec.usage) codes.push("USAGE_LIMIT_EXCEEDED");
  if (spec.idempotent) codes.push("CONFLICT", "VALIDATION_ERROR");
  return [...new Set([...codes, ...(spec.errors ?? [])])];
}

type Out<S> = S extends z.ZodType ? z.output<S> : undefined;

/** What a route implementation receives: validated inputs plus the caller. */
export interface RouteContext<R extends RouteSpec> {
  params: Out<R["params"]>;
  query: Out<R["query"]>;
  body: Out<R["body"]>;
  /** The caller; set for `user` and `admin` routes. */
  user: R["access"] extends "user" | "admin" ? User : undefined;
  claims: R["access"] extends "user" | "admin" ? TokenClaims : undefined;
  isAdmin: boolean;
  requestId: string;
  /** The raw request body as sent (signature checks). */
  rawBody: string;
  headers: Record<string, string | undefined>;
  event: APIGatewayProxyEventV2;
}

/** A route's reply: a status (default 200), a JSON body, or a non-JSON body with its content type. */
export interface Reply {
  status?: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** Send `body` as-is (a string) with this content type instead of JSON. */
  contentType?: string;
}

export type RouteImpl<R extends RouteSpec> = (ctx: RouteContext<R>) => Promise<Reply> | Reply;

export const ok = (body: unknown): Reply => ({ status: 200, body });
export const created = (body: unknown): Reply => ({ status: 201, body });
export const noContent = (): Reply => ({ status: 204 });

/**
 * Request headers a browser may send to any route (CORS; `authorization` must be named, a wildcard does not cover
 * it): the handlers' own CORS (functions/lib/http.ts), the local gateway's preflight and API Gateway's (stacks/Api.ts).
 */
export const CORS_ALLOW_HEADERS = ["authorization", "content-type", "idempotency-key"] as const;

/** Identity helper that keeps each route's literal types for inference. */
export const defineRoutes = <const T extends Record<string, RouteSpec>>(routes: T): T => routes;
