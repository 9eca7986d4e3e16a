import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { httpGroup } from "../lib/http";
import { docsRoutes } from "./routes/docs";
import { ok } from "../lib/route";
import { AppError } from "../../core/error";

/**
 * The OpenAPI document, generated at build time (`npm run openapi`, scripts/openapi.ts) and bundled as JSON: no request
 * builds it (issue #24 cold starts). A chunk of its own, loaded for the document only, not for the page or its assets.
 */
const OpenApiDocument = () => import("./openapi.json");

// Swagger UI is served from the npm package's own files (no CDN): the docs Lambda installs swagger-ui-dist.
const ASSETS: Record<string, string> = {
  "swagger-ui.css": "text/css",
  "swagger-ui-bundle.js": "application/javascript",
  "swagger-ui-standalone-preset.js": "application/javascript",
  "favicon-32x32.png": "image/png",
};

const swaggerDir = () => dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Research-to-Delivery API</title>
<link rel="icon" href="/api/docs/favicon-32x32.png"><link rel="stylesheet" href="/api/docs/swagger-ui.css"></head>
<body><div id="swagger-ui"></div>
<script src="/api/docs/swagger-ui-bundle.js"></script>
<script src="/api/docs/swagger-ui-standalone-preset.js"></script>
<script>window.onload = () => { window.ui = SwaggerUIBundle({ url: "/api/openapi.json", dom_id: "#swagger-ui",
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset], layout: "StandaloneLayout" }); };</script>
</body></html>`;

/** The API description: OpenAPI 3.1 JSON and a browsable Swagger UI page. */
export const handler = httpGroup(docsRoutes, {
  "docs.openapi": async () => ok((await OpenApiDocument()).default),
  // The page's CSP lets Swagger UI's inline start-up script run; everything else keeps the strict defaults.
  "docs.page": () => ({
    status: 200,
    body: PAGE,
    contentType: "text/html; charset=utf-8",
    headers: { "content-security-policy": "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; img-src 'self' data:" },
  }),
  "docs.asset": async ({ params }) => {
    const type = ASSETS[params.asset];
    if (!type) throw new AppError("NOT_FOUND", `No documentation asset ${params.asset}`);
    const data = await readFile(join(swaggerDir(), params.asset));
    return { status: 200, body: type.startsWith("image/") ? data : data.toString("utf8"), contentType: type, headers: { "cache-control": "public, max-age=86400" } };
  },
});
