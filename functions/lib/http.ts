import { Readable } from "node:stream";
import middy from "@middy/core";
import httpRouterHandler from "@middy/http-router";
import httpHeaderNormalizer from "@middy/http-header-normalizer";
import httpEventNormalizer from "@middy/http-event-normalizer";
import httpCors from "@middy/http-cors";
import httpSecurityHeaders from "@middy/http-security-headers";
import { Logger } from "@aws-lambda-powertools/logger";
import { injectLambdaContext } from "@aws-lambda-powertools/logger/middleware";
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2, Context } from "aws-lambda";
import type { z } from "zod";
import { AppError, Errors, type FieldError } from "../../core/error";
import { Config } from "../../core/config";
import { withRequestScope } from "../../core/context";
import type { User } from "../../core/user";
import type { TokenClaims } from "../../core/user/schema";
import { unstorableValues } from "../../core/json-object";
import { wwwAuthenticate } from "./bearer";
import { bodyLimitOf, CORS_ALLOW_HEADERS, type Reply, type RouteContext, type RouteImpl, type RouteSpec } from "./route";

// Loaded when a route with a rate limit or a plan gate is first reached: most routes have neither, and the gates
// bring the billing ledger and the workspace module into every cold start otherwise (bench/cold.ts).
const rateLimits = () => import("../../core/rate-limit");
const planGates = () => import("../../core/billing/gates");
// Loaded when a route that counts usage (`counts`) first answers 2xx: only the integration syncs do.
const usageCounters = () => import("../../core/billing/usage-counters");
// Loaded when a request sends an Idempotency-Key to a route that takes one: Powertools' idempotency utility.
const idempotency = () => import("./idempotency");
// Loaded when a route that authenticates is first reached: the JWT verifier and the user module (ElectroDB and the
// DynamoDB client with it). A Lambda whose routes are all public or signed (docs, webhooks) never loads them.
const authentication = () => Promise.all([import("./auth"), import("../../core/user")]);

export const logger = new Logger({ serviceName: "research-to-delivery", logLevel: Config.logLevel() as "INFO" });


type Event = APIGatewayProxyEventV2 & { rawBody?: string };
type Request = middy.Request<Event, APIGatewayProxyResultV2, Error, Context>;

const requestIdOf = (event: Event, context: Context): string =>
  event.requestContext?.requestId ?? context.awsRequestId ?? "local";

/** Request id on the logger and on every response as `x-request-id`. */
const requestIdMiddleware = (): middy.MiddlewareObj<Event, APIGatewayProxyResultV2> => {
  const stamp = (request: Request) => {
    const res = request.response;
    if (res && typeof res === "object") {
      res.headers = { ...(res.headers ?? {}), "x-request-id": requestIdOf(request.event, request.context) };
    }
  };
  return {
    before: (request) => {
      logger.appendKeys({ request_id: requestIdOf(request.event, request.context) });
    },
    after: stamp,
    onError: stamp,
  };
};

/** Decoded size of the event's body in bytes (API Gateway base64-encodes binary bodies). */
const bodyBytes = (event: Event): number =>
  typeof event.body === "string" ? Buffer.byteLength(event.body, event.isBase64Encoded ? "base64" : "utf8") : 0;

/**
 * 413 PAYLOAD_TOO_LARGE for a body over the route's limit (`bodyLimitOf`), before anything parses it. API Gateway
 * only caps bodies at 10 MB and Function URLs at Lambda's 6 MB, so this is where a smaller route limit (uploads,
 * webhooks) holds in AWS; the local gateway refuses the same bodies before reading them. An event without a known
 * route key (a Function URL's `$default`) gets the group's largest limit.
 */
const bodyLimitMiddleware = (specs: ReadonlyMap<string, RouteSpec>): middy.MiddlewareObj<Event, APIGatewayProxyResultV2> => {
  const largest = [...specs.values()].reduce((a, b) => (bodyLimitOf(b) > bodyLimitOf(a) ? b : a));
  return {
    before: ({ event }) => {
      const spec = specs.get(event.routeKey) ?? largest;
      if (bodyBytes(event) > bodyLimitOf(spec)) throw payloadTooLarge(spec);
    },
  };
};

/** The one 413 of the HTTP stack, for a body over the route's limit (the local gateway answers the same). */
export const payloadTooLarge = (spec: Pick<RouteSpec, "bodyLimit" | "bodyType" | "bodyLimitHint">) => {
  const limit = bodyLimitOf(spec);
  const hint = spec.bodyLimitHint ? `; ${spec.bodyLimitHint}` : "";
  return new AppError("PAYLOAD_TOO_LARGE", `The request body is larger than this endpoint accepts (${limit} bytes)${hint}`, { limit_bytes: limit });
};

/**
 * JSON body parsing that keeps the raw body (webhook signatures need it) and answers malformed JSON with 422
 * (spec 01 Errors: malformed request body), not 415. Routes with `bodyType: "raw"` (route keys in `rawRoutes`)
 * only get the raw body: their handler verifies a signature first (spec 02: an invalid webhook payload is 400).
 * Routes that take no body (`bodyless`) never parse one: whatever a client sends there is ignored, not a 422.
 */
const jsonBodyMiddleware = (rawRoutes: ReadonlySet<string>, bodyless: ReadonlySet<string>): middy.MiddlewareObj<Event, APIGatewayProxyResultV2> => ({
  before: (request) => {
    const { event } = request;
    if (typeof event.body !== "string") return;
    const type = event.headers?.["content-type"] ?? "";
    // Multipart bodies are the multipart parser's, and an upload's bytes are not text: decoding them would be wasted.
    if (type.startsWith("multipart/")) return;
    const raw = event.isBase64Encoded ? Buffer.from(event.body, "base64").toString("utf8") : event.body;
    event.rawBody = raw;
    if (rawRoutes.has(event.routeKey) || bodyless.has(event.routeKey)) return;
    if (!/^application\/([\w.+-]+\+)?json\b/i.test(type) || raw.trim() === "") return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      throw Errors.validation([{ loc: ["body"], msg: "Body is not valid JSON", type: "json_invalid" }], "Malformed JSON body");
    }
    // `null` is JSON but no body: read as absent it would pass every all-optional schema as `{}` (an empty update).
    if (parsed === null) throw Errors.validation([{ loc: ["body"], msg: "Body must be a JSON value other than null", type: "invalid_type" }], "Malformed JSON body");
    const unstorable = unstorableValues(parsed);
    if (unstorable.length) {
      throw Errors.validation(unstorable.map((p) => ({ loc: ["body", ...p.path], msg: p.message, type: p.code })), "The body holds values that cannot be stored");
    }
    (event as { body: unknown }).body = parsed;
    event.isBase64Encoded = false;
  },
});

/**
 * The multipart parser for the group's upload routes only: a route that takes JSON or no body never parses a
 * multipart one (as `jsonBodyMiddleware` skips `bodyless`), so a stray multipart body there is ignored, not a 422.
 * An event without a known route key (a Function URL's `$default`) is still parsed, as the JSON parser does.
 * @param skip the route keys of the group's routes that are not multipart
 * @param parser the group's multipart parser (`GroupOptions.multipart`)
 */
const multipartRoutesOnly = (skip: ReadonlySet<string>, parser: middy.MiddlewareObj<Event, APIGatewayProxyResultV2>): middy.MiddlewareObj<Event, APIGatewayProxyResultV2> => ({
  before: async (request) => {
    if (skip.has(request.event.routeKey)) return;
    await parser.before?.(request);
  },
});

/**
 * One spelling per response header: middy's middlewares add capitalised names (Content-Security-Policy), our code
 * lower-case ones. Without this a route's own header (the docs page's CSP) would go out next to the middleware's
 * default and a browser would enforce both. Lower-cases every name; a route's lower-case header wins.
 */
const oneSpellingPerHeader = (): middy.MiddlewareObj<Event, APIGatewayProxyResultV2> => {
  const merge = (request: Request) => {
    const res = request.response;
    if (!res || typeof res !== "object" || !res.headers) return;
    const out: Record<string, string | number | boolean> = {};
    for (const [name, value] of Object.entries(res.headers)) {
      if (value === undefined) continue;
      const key = name.toLowerCase();
      if (key in out && name !== key) continue;
      out[key] = value;
    }
    res.headers = out;
  };
  return { after: merge, onError: merge };
};

/**
 * `Cache-Control: no-store` on every JSON answer of an authenticated route (successes and errors alike): a shared or
 * browser cache must never keep one user's data. Route keys in `authenticated`; an event without a known route key
 * (a Function URL's `$default`) counts as authenticated when any route of the group is.
 */
const noStoreMiddleware = (authenticated: ReadonlySet<string>, groupAuthenticated: boolean): middy.MiddlewareObj<Event, APIGatewayProxyResultV2> => {
  const mark = (request: Request) => {
    const res = request.response;
    if (!res || typeof res !== "object") return;
    const known = request.event.routeKey && request.event.routeKey !== "$default";
    if (!(known ? authenticated.has(request.event.routeKey) : groupAuthenticated)) return;
    const type = Object.entries(res.headers ?? {}).find(([name]) => name.toLowerCase() === "content-type")?.[1];
    if (!/^application\/([\w.+-]+\+)?json\b/i.test(String(type ?? ""))) return;
    res.headers = { ...(res.headers ?? {}), "cache-control": "no-store" };
  };
  return { after: mark, onError: mark };
};

/** The security headers of every handler answer (middy's http-security-headers with its defaults). */
const securityHeadersMiddleware = () => httpSecurityHeaders();

/**
 * The headers `securityHeadersMiddleware` adds to an answer of this content type, lower-cased: for answers made
 * outside a handler (the local gateway's 404, 405, 413, 431), so they carry exactly what the handlers' carry.
 */
export async function securityHeadersFor(contentType = "application/json"): Promise<Record<string, string>> {
  const request = { response: { statusCode: 200, headers: { "content-type": contentType }, body: "" } };
  await securityHeadersMiddleware().after!(request as unknown as Request);
  return Object.fromEntries(
    Object.entries(request.response.headers)
      .filter(([name, value]) => value !== undefined && name.toLowerCase() !== "content-type")
      .map(([name, value]) => [name.toLowerCase(), String(value)]),
  );
}

const CODE_FOR_HTTP_STATUS: Record<number, AppError["code"]> = {
  400: "BAD_REQUEST",
  404: "NOT_FOUND",
  405: "METHOD_NOT_ALLOWED",
  413: "PAYLOAD_TOO_LARGE",
  415: "UNSUPPORTED_MEDIA_TYPE",
  422: "VALIDATION_ERROR",
};

/**
 * The one error envelope (DESIGN.md section 5): `{detail, code, request_id}` plus the error's extra fields.
 * AppError keeps its own status; middy's HTTP errors keep theirs; anything else is a logged 500.
 */
const errorEnvelopeMiddleware = (): middy.MiddlewareObj<Event, APIGatewayProxyResultV2> => ({
  onError: (request) => {
    const err = request.error as (Error & { statusCode?: number; expose?: boolean }) | null;
    if (!err) return;
    const request_id = requestIdOf(request.event, request.context);
    let status: number;
    let body: Record<string, unknown>;
    if (err instanceof AppError) {
      status = err.status;
      body = { detail: err.message, code: err.code, request_id, ...err.extra };
      if (status >= 500) logger.error("request failed", { error: err });
    } else if (typeof err.statusCode === "number" && err.statusCode < 500 && err.expose !== false) {
      status = err.statusCode;
      body = { detail: err.message, code: CODE_FOR_HTTP_STATUS[status] ?? "BAD_REQUEST", request_id };
    } else {
      logger.error("unhandled error", { error: err });
      status = 500;
      body = { detail: "Internal error; quote the request id when reporting it", code: "INTERNAL", request_id };
    }
    const retryAfter = err instanceof AppError ? err.extra.retry_after_seconds : undefined;
    request.response = {
      statusCode: status,
      headers: {
        "content-type": "application/json",
        ...(typeof retryAfter === "number" ? { "retry-after": String(Math.max(1, Math.ceil(retryAfter))) } : {}),
        // RFC 6750 section 3: every 401 challenges the client.
        ...(status === 401 && err instanceof AppError ? { "www-authenticate": wwwAuthenticate(err) } : {}),
      },
      body: JSON.stringify(body),
    };
  },
});

function issuesToErrors(where: string, error: z.ZodError): FieldError[] {
  return error.issues.map((issue) => ({
    loc: [where, ...issue.path.map((p) => (typeof p === "symbol" ? String(p) : p))],
    msg: issue.message,
    type: issue.code,
  }));
}

function parsePart<S extends z.ZodType | undefined>(where: string, schema: S, value: unknown) {
  if (!schema) return undefined;
  const result = schema.safeParse(value ?? {});
  if (!result.success) throw Errors.validation(issuesToErrors(where, result.error));
  return result.data;
}

const isReadable = (body: unknown): body is Readable => body instanceof Readable;

function toResult(spec: RouteSpec, reply: Reply): APIGatewayProxyResultV2 {
  const status = reply.status ?? 200;
  if (process.env.VALIDATE_RESPONSES === "1" && !reply.contentType && !isReadable(reply.body)) {
    const schema = spec.responses[status];
    if (schema === undefined) throw new AppError("INTERNAL", `Route answered ${status}, which its spec does not declare`);
    if (schema) {
      const checked = schema.safeParse(reply.body);
      if (!checked.success) throw new AppError("INTERNAL", `Response does not match its schema: ${checked.error.message}`);
    }
  }
  if (status === 204) return { statusCode: 204, headers: reply.headers ?? {} };
  if (isReadable(reply.body)) {
    // A response stream (SSE): middy's streaming mode pipes it to Lambda's response stream.
    return {
      statusCode: status,
      headers: { "content-type": reply.contentType ?? "text/event-stream", "cache-control": "no-cache", connection: "keep-alive", "x-accel-buffering": "no", ...(reply.headers ?? {}) },
      body: reply.body as unknown as string,
    };
  }
  if (reply.contentType) {
    const isBinary = Buffer.isBuffer(reply.body);
    return {
      statusCode: status,
      headers: { "content-type": reply.contentType, ...(reply.headers ?? {}) },
      body: isBinary ? (reply.body as Buffer).toString("base64") : String(reply.body),
      isBase64Encoded: isBinary,
    };
  }
  return {
    statusCode: status,
    headers: { "content-type": "application/json", ...(reply.headers ?? {}) },
    body: JSON.stringify(reply.body),
  };
}

/** The workspace a gated or counting route names (its `workspace_id` where its scope says), or none (workspace creation). */
function gatedWorkspace(spec: RouteSpec, ctx: RouteContext<RouteSpec>): string | undefined {
  const from = spec.workspaceScope === "path" ? ctx.params : spec.workspaceScope === "query" ? ctx.query : spec.workspaceScope === "body" ? ctx.body : undefined;
  const id = (from as { workspace_id?: unknown } | undefined)?.workspace_id;
  return typeof id === "string" ? id : undefined;
}

/** The feature a request needs: the route's flag, unless its `when` says this request is not gated. */
function featureFor(spec: RouteSpec, ctx: RouteContext<RouteSpec>) {
  if (!spec.feature) return undefined;
  if (typeof spec.feature === "string") return spec.feature;
  return spec.feature.when(ctx) ? spec.feature.flag : undefined;
}

/** Wrap one route implementation: authenticate per the route's access, validate inputs, run, serialise. */
function bind(id: string, spec: RouteSpec, impl: RouteImpl<RouteSpec>) {
  // One request scope per request: memberships are resolved once (core/context.ts).
  return (event: Event, context: Context): Promise<APIGatewayProxyResultV2> => withRequestScope(() => run(event, context));
  async function run(event: Event, context: Context): Promise<APIGatewayProxyResultV2> {
    let user: User | undefined;
    let claims: TokenClaims | undefined;
    let isAdmin = false;
    if (spec.access === "user" || spec.access === "admin") {
      const [{ isAdminClaims, verifyBearer }, { fromClaims, hasProductAccess }] = await authentication();
      claims = await verifyBearer(event.headers?.authorization);
      user = await fromClaims(claims);
      isAdmin = isAdminClaims(claims, user);
      if (spec.access === "admin" && !isAdmin) throw new AppError("FORBIDDEN", "Admins only");
      if (user.access_status === "suspended" && !spec.allowSuspended) {
        throw new AppError("FORBIDDEN", "This account is suspended");
      }
      // Product use needs product access (spec 01 User), not only workspace creation: a pending user added to a
      // workspace must redeem a code first. Admin routes answer to the admin claim alone.
      if (spec.access === "user" && !spec.allowWithoutProductAccess && !hasProductAccess(user)) {
        throw new AppError("PRODUCT_ACCESS_REQUIRED", "Your account is waiting for product access: redeem an access code first");
      }
    }
    const ctx = {
      params: parsePart("path", spec.params, event.pathParameters),
      query: parsePart("query", spec.query, event.queryStringParameters),
      body: spec.bodyType === "raw" ? undefined : parsePart("body", spec.body, event.body),
      user,
      claims,
      isAdmin,
      requestId: requestIdOf(event, context),
      rawBody: event.rawBody ?? "",
      headers: event.headers ?? {},
      event,
    } as RouteContext<RouteSpec>;
    const work = async () => {
      // Valid requests only count: a typo the validator refuses does not use up the caller's window.
      if (spec.rateLimit && user) await (await rateLimits()).limitUser(user.id, spec.rateLimit);
      if ((spec.feature || spec.usage) && user) await (await planGates()).checkGates({ userId: user.id, workspaceId: gatedWorkspace(spec, ctx) }, { feature: featureFor(spec, ctx), usage: spec.usage, roles: spec.roles });
      return impl(ctx);
    };
    // A retry with the first request's key replays its answer before the limits and gates: the first request passed
    // them, and its work (which may have used up the plan's room) must not be refused to the client that asked for it.
    // The caller's status and product access were checked above; the replay checks the memberships again itself.
    const key = spec.idempotent ? ctx.headers["idempotency-key"] : undefined;
    const reply = key !== undefined && user
      ? await (await idempotency()).runOncePerKey(id, user.id, key, { params: ctx.params, query: ctx.query, body: ctx.body }, context, work, spec)
      : await work();
    const result = toResult(spec, reply);
    if (spec.counts) await countUsage(spec, ctx, result);
    return result;
  }
}

/**
 * Count a 2xx answer of a route that declares `counts` in the workspace it names. A failed count is logged and the
 * answer stands: the work is done, and the dashboard's figure is not worth a retried sync.
 */
async function countUsage(spec: RouteSpec, ctx: RouteContext<RouteSpec>, result: APIGatewayProxyResultV2): Promise<void> {
  const status = typeof result === "object" ? (result.statusCode ?? 200) : 200;
  const workspaceId = gatedWorkspace(spec, ctx);
  if (!spec.counts || status < 200 || status >= 300 || !workspaceId) return;
  try {
    await (await usageCounters()).countUsage(workspaceId, spec.counts);
  } catch (err) {
    logger.warn("usage count failed", { usage: spec.counts, workspace_id: workspaceId, error: err as Error });
  }
}

/** An implementation for every route of a group's route table (`functions/http/routes/<group>.ts`). */
export type GroupImpl<T extends Record<string, RouteSpec>> = { [K in keyof T]: RouteImpl<T[K]> };

/** Options of `httpGroup`. */
export interface GroupOptions {
  /**
   * The multipart body parser (`multipartBodyParser()` from functions/lib/multipart.ts), required when the table
   * has `bodyType: "multipart"` routes. Passed in by the groups that take uploads so the parser is bundled only
   * into their Lambda.
   */
  multipart?: middy.MiddlewareObj<APIGatewayProxyEventV2, APIGatewayProxyResultV2>;
}

/**
 * Build the Lambda handler of one endpoint group: the one middy stack (DESIGN.md section 4.6) around an
 * http-router over the group's routes. The type demands an implementation for every route of the table.
 * @param table the group's routes (`routes/<group>.ts`): only these are imported, so a cold start builds only
 *   this group's schemas
 * @throws Error at import when the table mixes groups, a route has no implementation, or the table has
 *   multipart routes and no multipart parser was given
 */
export function httpGroup<T extends Record<string, RouteSpec>>(table: T, impls: GroupImpl<T>, opts: GroupOptions = {}) {
  const entries = Object.entries(table) as [string, RouteSpec][];
  const groupsIn = new Set(entries.map(([, spec]) => spec.group));
  if (groupsIn.size !== 1) throw new Error(`A group's route table must hold one group, not ${[...groupsIn].join(", ") || "none"}`);
  const group = [...groupsIn][0];
  const routerRoutes = entries
    .map(([id, spec]) => {
      const impl = (impls as Record<string, RouteImpl<RouteSpec>>)[id];
      if (!impl) throw new Error(`Route ${id} has no implementation in group ${group}`);
      // A stream's answer cannot be kept for a replay.
      if (spec.idempotent && spec.streaming) throw new Error(`Route ${id} streams, so it cannot take an Idempotency-Key`);
      return { method: spec.method, path: spec.path, handler: bind(id, spec, impl), literal: spec.path.split("{").length };
    })
    // Literal paths before parameterised ones, as API Gateway matches.
    .sort((a, b) => a.literal - b.literal);
  const keyOf = (spec: RouteSpec) => `${spec.method} ${spec.path}`;
  const rawRoutes = new Set(entries.filter(([, spec]) => spec.bodyType === "raw").map(([, spec]) => keyOf(spec)));
  const bodyless = new Set(entries.filter(([, spec]) => !spec.body).map(([, spec]) => keyOf(spec)));
  const specs = new Map(entries.map(([, spec]) => [keyOf(spec), spec]));
  const isAuthenticated = (spec: RouteSpec) => spec.access === "user" || spec.access === "admin";
  const authenticated = new Set(entries.filter(([, spec]) => isAuthenticated(spec)).map(([, spec]) => keyOf(spec)));
  const multipart = entries.some(([, spec]) => spec.bodyType === "multipart");
  const notMultipart = new Set(entries.filter(([, spec]) => spec.bodyType !== "multipart").map(([, spec]) => keyOf(spec)));
  if (multipart && !opts.multipart) throw new Error(`Group ${group} has multipart routes: pass httpGroup a multipart parser`);
  // A plan gate reads the workspace from the request itself; a by-id route would have to load the resource first.
  const unscoped = entries.filter(([, spec]) => (spec.feature || spec.usage) && spec.workspaceScope === "resource");
  if (unscoped.length) throw new Error(`Plan gates need the workspace in the path, query or body: ${unscoped.map(([id]) => id).join(", ")}`);
  const uncounted = entries.filter(([, spec]) => spec.counts && (!spec.workspaceScope || spec.workspaceScope === "resource"));
  if (uncounted.length) throw new Error(`Counted usage needs the workspace in the path, query or body: ${uncounted.map(([id]) => id).join(", ")}`);
  // A group of response-streaming routes (SSE) is a streaming Lambda: errors before the stream opens still answer
  // with the ordinary envelope, as a string body.
  const streaming = entries.some(([, spec]) => spec.streaming);
  if (streaming && !entries.every(([, spec]) => spec.streaming)) throw new Error(`Group ${group} mixes streaming and ordinary routes`);
  return middy<Event, APIGatewayProxyResultV2, Error, Context>({ streamifyResponse: streaming })
    .use(injectLambdaContext(logger, { resetKeys: true }))
    .use(requestIdMiddleware())
    .use(httpHeaderNormalizer())
    .use(httpEventNormalizer())
    .use([
      bodyLimitMiddleware(specs),
      jsonBodyMiddleware(rawRoutes, bodyless),
      // Only groups with upload routes parse multipart bodies; elsewhere such a body fails the route's validation.
      ...(multipart && opts.multipart ? [multipartRoutesOnly(notMultipart, opts.multipart as unknown as middy.MiddlewareObj<Event, APIGatewayProxyResultV2>)] : []),
    ])
    .use(oneSpellingPerHeader())
    // After (and on error) middlewares run in reverse: this marks the answer before the spellings are merged.
    .use(noStoreMiddleware(authenticated, entries.some(([, spec]) => isAuthenticated(spec))))
    .use(securityHeadersMiddleware())
    .use(httpCors({ origins: Config.corsOrigins(), headers: CORS_ALLOW_HEADERS.join(","), exposeHeaders: "x-request-id,retry-after,www-authenticate,idempotent-replayed" }))
    .use(errorEnvelopeMiddleware())
    .handler(httpRouterHandler(routerRoutes.map(({ method, path, handler }) => ({ method, path, handler })) as never) as never);
}
