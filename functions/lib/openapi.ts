import { OpenAPIRegistry, OpenApiGeneratorV31 } from "@asteasolutions/zod-to-openapi";
import type { RouteSpec } from "./route";
import { routes } from "../http/routes";

const STATUS_TEXT: Record<number, string> = { 200: "OK", 201: "Created", 204: "No Content" };

const ERROR_ENVELOPE = {
  type: "object",
  required: ["detail", "code", "request_id"],
  properties: {
    detail: { type: "string", description: "human-readable message" },
    code: { type: "string", description: "stable machine-readable code" },
    request_id: { type: "string" },
    errors: {
      type: "array",
      description: "present on 422 VALIDATION_ERROR",
      items: {
        type: "object",
        properties: { loc: { type: "array", items: { type: ["string", "integer"] } }, msg: { type: "string" }, type: { type: "string" } },
      },
    },
  },
} as const;

/**
 * The OpenAPI 3.1 document, generated from the route table and the zod schemas (never written by hand).
 * Error responses use the one envelope of DESIGN.md section 5.
 * @param table the routes to describe (default: the whole route table; the tests pass one route at a time).
 */
export function openApiDocument(serverUrl?: string, table: Record<string, RouteSpec> = routes) {
  const registry = new OpenAPIRegistry();
  registry.registerComponent("securitySchemes", "bearer", { type: "http", scheme: "bearer", bearerFormat: "JWT" });
  registry.registerComponent("schemas", "ErrorEnvelope", ERROR_ENVELOPE as never);
  const errorRef = { $ref: "#/components/schemas/ErrorEnvelope" };
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
    const errors: Record<string, string> = { 422: "Validation error" };
    if (spec.access === "user" || spec.access === "admin") errors[401] = "Missing, expired or invalid token";
    if (spec.workspaceScope) errors[403] = "Not a member of the workspace, or the role is insufficient";
    if (spec.access === "webhook") errors[400] = "Missing or invalid signature";
    for (const [status, description] of Object.entries(errors)) {
      responses[status] = { description, content: { "application/json": { schema: errorRef } } };
    }
    const bodyContent = spec.bodyType === "multipart" ? "multipart/form-data" : "application/json";
    registry.registerPath({
      operationId: id,
      method: spec.method.toLowerCase() as "get",
      path: spec.path,
      summary: spec.summary,
      tags: [spec.group],
      ...(spec.access === "user" || spec.access === "admin" ? { security: [{ bearer: [] }] } : {}),
      request: {
        ...(spec.params ? { params: spec.params as never } : {}),
        ...(spec.query ? { query: spec.query as never } : {}),
        ...(spec.body ? { body: { required: true, content: { [bodyContent]: { schema: spec.body } } } } : {}),
      },
      responses: responses as never,
    });
  }
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: "3.1.0",
    info: {
      title: "Research-to-Delivery API",
      version: "0.1.0",
      description: "Research files in; grounded insights, prioritized recommendations, typed-block documents and tickets out.",
    },
    ...(serverUrl ? { servers: [{ url: serverUrl }] } : {}),
  });
}
