import * as z from "zod";
import { defineRoutes, type RouteSpec } from "../../lib/route";

/** The API description: OpenAPI document and docs page. */
export const docsRoutes = defineRoutes({
  "docs.openapi": {
    method: "GET", path: "/api/openapi.json", group: "docs", access: "public",
    summary: "This API's OpenAPI 3.1 document",
    responses: { 200: z.record(z.string(), z.unknown()) },
  },
  "docs.page": {
    method: "GET", path: "/api/docs", group: "docs", access: "public",
    summary: "Browsable API documentation (Swagger UI)",
    responses: { 200: z.string() },
    produces: "text/html",
  },
  "docs.asset": {
    method: "GET", path: "/api/docs/{asset}", group: "docs", access: "public",
    summary: "Static assets of the documentation page",
    params: z.object({ asset: z.string() }),
    responses: { 200: z.string() },
    produces: "application/octet-stream",
  },
} satisfies Record<string, RouteSpec>);
