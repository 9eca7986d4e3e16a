import { OpenAPIRegistry, OpenApiGeneratorV31 } from "@asteasolutions/zod-to-openapi";
import * as z from "zod";
import { ERROR_STATUS, type ErrorCode } from "../../core/error";
import { errorCodesOf, type RouteSpec } from "./route";
import { routes } from "../http/routes";

const STATUS_TEXT: Record<number, string> = {
  200: "OK",
  201: "Created",
  204: "No Content",
  400: "Bad request",
  401: "Missing, expired or invalid token",
  402: "Payment required: no active subscription, or a plan limit reached",
  403: "Forbidden: not a member of the workspace, a role or plan feature missing, a suspended account, or an account without product access (PRODUCT_ACCESS_REQUIRED)",
  404: "Not found, or not visible to the caller",
  409: "Conflict with the resource's current state",
  413: "Request body larger than the endpoint accepts",
  415: "Unsupported media type",
  422: "Validation error: `errors` lists each problem",
  424: "A connected provider refused the stored credentials",
  429: "Too many requests: retry after `Retry-After` seconds",
  500: "Internal error",
  503: "A dependency is busy or unavailable: retry later",
};

const ERROR_ENVELOPE = {
  type: "object",
  required: ["detail", "code", "request_id"],
  properties: {
    detail: { type: "string", description: "human-readable message" },
    code: { type: "string", description: "stable machine-readable code (each response lists the codes it can carry)" },
    request_id: { type: "string", description: "also sent as the x-request-id header" },
    errors: {
      type: "array",
      description: "present on 422 VALIDATION_ERROR",
      items: {
        type: "object",
        properties: { loc: { type: "array", items: { type: ["string", "integer"] } }, msg: { type: "string" }, type: { type: "string" } },
      },
    },
    retry_after_seconds: { type: "number", description: "429 and 503: also sent as the Retry-After header" },
    valid_transitions: { type: "array", items: { type: "string" }, description: "INVALID_TRANSITION: the statuses reachable from the current one" },
    source_ids: { type: "array", items: { type: "string" }, description: "SOURCE_NOT_READY: the sources that are not completed" },
    limit: { type: ["integer", "null"], description: "USAGE_LIMIT_EXCEEDED: the plan's limit" },
  },
} as const;

/** Statuses whose answers may carry `retry_after_seconds`, which the error middleware also sends as Retry-After. */
const RETRY_AFTER_STATUSES = new Set([429, 503]);

/** The error responses of one operation, grouped by status, each naming its codes and pointing at the one envelope. */
function errorResponses(spec: RouteSpec): Record<string, unknown> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of errorCodesOf(spec)) byStatus.set(ERROR_STATUS[code], [...(byStatus.get(ERROR_STATUS[code]) ?? []), code]);
  const out: Record<string, unknown> = {};
  for (const [status, codes] of [...byStatus].sort(([a], [b]) => a - b)) {
    out[status] = {
      description: `${STATUS_TEXT[status] ?? "Error"} (${codes.length > 1 ? "codes" : "code"}: ${codes.join(", ")})`,
      ...(RETRY_AFTER_STATUSES.has(status)
        ? { headers: { "Retry-After": { description: "seconds to wait before retrying", schema: { type: "integer", minimum: 1 } } } }
        : {}),
      content: { "application/json": { schema: { $ref: "#/components/schemas/ErrorEnvelope" } } },
    };
  }
  return out;
}

type Json = Record<string, any>;

const defOf = (schema: z.ZodType): Json => (schema as unknown as { _zod: { def: Json } })._zod.def;
/** The schema under optional / default / nullable wrappers. */
function unwrapped(schema: z.ZodType): z.ZodType {
  const def = defOf(schema);
  return ["optional", "default", "prefault", "nullable"].includes(def.type) ? unwrapped(def.innerType) : schema;
}
/** `z.stringbool()`: a string in, a boolean out. */
const isStringBool = (schema: z.ZodType) => {
  const def = defOf(unwrapped(schema));
  return def.type === "pipe" && defOf(def.in).type === "string" && defOf(def.out).type === "boolean";
};

/**
 * Bring the generated parameters to what the server accepts. A query or path value is a string, never null: a
 * coerced number that also takes null in JavaScript is documented without "null". A `z.stringbool()` is a boolean on
 * the wire (the generator sees only its string input).
 */
function serverParameters(operation: Json, spec: RouteSpec): void {
  for (const p of (operation.parameters ?? []) as Json[]) {
    if (Array.isArray(p.schema?.type)) {
      const types = p.schema.type.filter((t: string) => t !== "null");
      p.schema.type = types.length === 1 ? types[0] : types;
    }
    const source = p.in === "query" ? spec.query : p.in === "path" ? spec.params : undefined;
    const field = (source as unknown as { shape?: Record<string, z.ZodType> } | undefined)?.shape?.[p.name];
    if (field && isStringBool(field)) p.schema = { type: "boolean", ...(p.schema.default !== undefined ? { default: p.schema.default === "true" || p.schema.default === true } : {}) };
  }
}

/**
 * "At least one field": an object body the server's validator refuses empty (a refinement, which JSON Schema cannot
 * read from zod) is documented with `minProperties: 1`. Exact: `{}` is the only object without properties.
 */
function serverBody(operation: Json, spec: RouteSpec, components: Json): void {
  const media = operation.requestBody?.content?.["application/json"];
  if (!media || !spec.body || spec.body.safeParse({}).success) return;
  const ref = typeof media.schema?.$ref === "string" ? String(media.schema.$ref).split("/").pop()! : undefined;
  const schema: Json = ref ? components[ref] : media.schema;
  if (schema?.type === "object" && !(schema.required?.length > 0) && !(schema.minProperties > 0)) schema.minProperties = 1;
}

/**
 * A route's plan gates (spec 02 Limits: Plans) as the `x-plan-gates` extension: `require_feature` (403
 * FORBIDDEN naming the feature; `conditional` when only some requests need it) and `require_usage` (402
 * USAGE_LIMIT_EXCEEDED), and a sentence in the description, so clients and readers see which plan a call needs.
 */
function planGates(operation: Json, spec: RouteSpec): void {
  if (!spec.feature && !spec.usage) return;
  const feature = typeof spec.feature === "string" ? { require_feature: spec.feature } : spec.feature ? { require_feature: spec.feature.flag, conditional: true } : {};
  operation["x-plan-gates"] = { ...feature, ...(spec.usage ? { require_usage: spec.usage } : {}) };
  const said = [
    spec.feature ? `needs a plan with ${"require_feature" in feature ? feature.require_feature : ""}${typeof spec.feature === "object" ? " (for the requests that enable it)" : ""} (403 FORBIDDEN with feature, plan and required_plan)` : "",
    spec.usage ? `needs room under the plan's ${spec.usage} limit (402 USAGE_LIMIT_EXCEEDED)` : "",
  ].filter(Boolean);
  operation.description = [operation.description, `Plan gate: ${said.join("; ")}.`].filter(Boolean).join("\n\n");
}

/** The request header of the routes that take one (RouteSpec.idempotent; functions/lib/idempotency.ts). */
const IDEMPOTENCY_HEADERS = z.object({
  "Idempotency-Key": z
    .string()
    .min(1)
    .max(255)
    .optional()
    .meta({
      description:
        "Optional. A retry with the same key (same caller, route, path, query and body) within 24 hours gets the first request's answer, with `idempotent-replayed: true`, instead of a second run charged again; 409 CONFLICT while the first still runs, 422 when the key came with another request.",
    }),
});

/**
 * The OpenAPI 3.1 document, generated from the route table and the zod schemas (never written by hand). Every
 * operation lists the error responses its route can answer (`errorCodesOf`: from its access, parameters, body and
 * declared `errors`), all as the one envelope of DESIGN.md section 5; parameters and bodies say what the server's
 * validators accept where the generator cannot see it (refinements, string booleans, coerced numbers).
 * Served as built by `npm run openapi` (scripts/openapi.ts writes functions/http/openapi.json, which the docs Lambda
 * bundles), so no request builds it; test/unit/openapi-generated.test.ts keeps the file equal to this function's output.
 * @param serverUrl the base URL of the API; default "/", the origin that serves this document
 * @param table the routes to describe (default: the whole route table; the tests pass one route at a time).
 */
export function openApiDocument(serverUrl = "/", table: Record<string, RouteSpec> = routes) {
  const registry = new OpenAPIRegistry();
  registry.registerComponent("securitySchemes", "bearer", { type: "http", scheme: "bearer", bearerFormat: "JWT" });
  registry.registerComponent("schemas", "ErrorEnvelope", ERROR_ENVELOPE as never);
  for (const [id, spec] of Object.entries(table)) {
    const responses: Record<string, unknown> = {};
    for (const [status, schema] of Object.entries(spec.responses)) {
      const code = Number(status);
      responses[status] = schema === null
        ? { description: STATUS_TEXT[code] ?? "No content" }
        : {
            description: STATUS_TEXT[code] ?? "Response",
            content: { [spec.produces ?? "application/json"]: { schema } },
          };
    }
    Object.assign(responses, errorResponses(spec));
    const bodyContent = spec.bodyType === "multipart" ? "multipart/form-data" : "application/json";
    registry.registerPath({
      operationId: id,
      method: spec.method.toLowerCase() as "get",
      path: spec.path,
      summary: spec.summary,
      tags: [spec.group],
      // Public and webhook routes say so with an empty list (no token; a webhook's signature is checked by its handler).
      security: spec.access === "user" || spec.access === "admin" ? [{ bearer: [] }] : [],
      request: {
        ...(spec.params ? { params: spec.params as never } : {}),
        ...(spec.query ? { query: spec.query as never } : {}),
        ...(spec.idempotent ? { headers: IDEMPOTENCY_HEADERS as never } : {}),
        ...(spec.body ? { body: { required: true, content: { [bodyContent]: { schema: spec.body } } } } : {}),
      },
      responses: responses as never,
    });
  }
  const doc = new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: "3.1.0",
    info: {
      title: "Research-to-Delivery API",
      version: "0.1.0",
      description: "Research files in; grounded insights, prioritized recommendations, typed-block documents and tickets out.",
    },
    servers: [{ url: serverUrl, description: serverUrl === "/" ? "the origin that serves this document" : "the API" }],
  });
  const components = (doc.components?.schemas ?? {}) as Json;
  for (const spec of Object.values(table)) {
    const operation = (doc.paths as Json)[spec.path]?.[spec.method.toLowerCase()];
    if (!operation) continue;
    serverParameters(operation, spec);
    serverBody(operation, spec, components);
    planGates(operation, spec);
  }
  return doc;
}
