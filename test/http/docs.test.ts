/**
 * The API description (route table -> OpenAPI 3.1) and the self-hosted Swagger UI page (no CDN).
 */
import { describe, expect, it } from "vitest";
import { routes } from "../../functions/http/routes";
import type { RouteSpec } from "../../functions/lib/route";
import { call } from "../support/api";
import { expectEnvelope, headersOf } from "./_helpers";

const table = Object.entries(routes) as [string, RouteSpec][];

describe("GET /api/openapi.json", () => {
  it("is OpenAPI 3.1 with every route of the table under its path and method, with its operationId", async () => {
    const res = await call("GET", "/api/openapi.json");

    expect(res.status).toBe(200);
    expect(headersOf(res)["content-type"]).toMatch(/application\/json/);
    const doc = res.body;
    expect(doc.openapi).toMatch(/^3\.1\./);
    expect(doc.info.title).toBeTruthy();
    const missing: string[] = [];
    for (const [id, r] of table) {
      const op = doc.paths?.[r.path]?.[r.method.toLowerCase()];
      if (!op) missing.push(`${r.method} ${r.path}`);
      else expect(op.operationId, `${r.method} ${r.path}`).toBe(id);
    }
    expect(missing).toEqual([]);
    const documented = Object.values(doc.paths as Record<string, Record<string, unknown>>).reduce((n, ops) => n + Object.keys(ops).length, 0);
    expect(documented).toBe(table.length);
  });

  it("documents bearer security, bodies, and the error envelope on guarded routes", async () => {
    const doc = (await call("GET", "/api/openapi.json")).body;
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: "http", scheme: "bearer" });
    const create = doc.paths["/api/workspaces"].post;
    expect(create.security).toEqual([{ bearer: [] }]);
    expect(create.requestBody.content["application/json"].schema).toBeTruthy();
    expect(create.responses["201"]).toBeTruthy();
    expect(create.responses["401"].content["application/json"].schema).toEqual({ $ref: "#/components/schemas/ErrorEnvelope" });
    const patch = doc.paths["/api/workspaces/{workspace_id}"].patch;
    expect(patch.responses["403"]).toBeTruthy();
    expect(patch.parameters).toEqual(expect.arrayContaining([expect.objectContaining({ name: "workspace_id", in: "path", required: true })]));
    const hook = doc.paths["/api/webhooks/idp"].post;
    // Public and webhook routes declare an empty security list: no token (a webhook's signature is checked instead).
    expect(hook.security).toEqual([]);
    expect(doc.paths["/api/openapi.json"].get.security).toEqual([]);
    expect(hook.responses["400"]).toBeTruthy();
    expect(doc.components.schemas.ErrorEnvelope.required).toEqual(["detail", "code", "request_id"]);
  });
});

describe("GET /api/docs", () => {
  it("serves HTML whose scripts, styles and icons all come from /api/docs/* (no CDN)", async () => {
    const res = await call("GET", "/api/docs");

    expect(res.status).toBe(200);
    expect(headersOf(res)["content-type"]).toMatch(/text\/html/);
    const refs = [...res.text.matchAll(/\b(?:src|href)\s*=\s*["']([^"']+)["']/gi)].map((m) => m[1]!);
    expect(refs.length).toBeGreaterThanOrEqual(3);
    expect(refs.filter((r) => !r.startsWith("/api/docs/"))).toEqual([]);
    expect(res.text).not.toMatch(/https?:\/\/|\/\/[a-z0-9.-]+\.[a-z]{2,}\//i);
    expect(res.text).toContain("/api/openapi.json");
  });

  it("sends exactly one Content-Security-Policy, and it lets the page's own scripts run", async () => {
    const res = await call("GET", "/api/docs");
    const csp = Object.entries(res.headers).filter(([k]) => k.toLowerCase() === "content-security-policy");
    expect(csp).toHaveLength(1);
    const policy = String(csp[0]![1]);
    expect(policy).toMatch(/script-src[^;]*'self'/);
    expect(policy).not.toMatch(/default-src 'none'/);
    expect(policy).not.toMatch(/\bsandbox\b/);
  });

  it("serves every asset the page references, with its content type", async () => {
    const page = await call("GET", "/api/docs");
    const refs = [...page.text.matchAll(/\b(?:src|href)\s*=\s*["'](\/api\/docs\/[^"']+)["']/gi)].map((m) => m[1]!);
    for (const ref of refs) {
      const res = await call("GET", ref);
      expect(res.status, ref).toBe(200);
      expect(res.text.length, ref).toBeGreaterThan(0);
    }
    const bundle = await call("GET", "/api/docs/swagger-ui-bundle.js");
    expect(headersOf(bundle)["content-type"]).toBe("application/javascript");
    expect(bundle.text).toContain("SwaggerUIBundle");
    expect(bundle.text.length).toBeGreaterThan(100_000);
    const css = await call("GET", "/api/docs/swagger-ui.css");
    expect(headersOf(css)["content-type"]).toBe("text/css");
  });

  it("serves only its known assets: anything else (including path tricks) is 404", async () => {
    for (const path of ["/api/docs/package.json", "/api/docs/..%2F..%2Fpackage.json", "/api/docs/index.html"]) {
      const res = await call("GET", path);
      expectEnvelope(res, 404, "NOT_FOUND");
    }
  });
});
