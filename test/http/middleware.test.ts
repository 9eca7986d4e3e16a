/**
 * The one middy stack (DESIGN.md sections 4.6 and 5): request id on every response, the error envelope,
 * security headers, CORS, and the gateway's 404/405.
 */
import { randomUUID } from "node:crypto";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { startGateway } from "../../local/gateway";
import { call, newUser, newWorkspace } from "../support/api";
import { expectEnvelope, headersOf } from "./_helpers";

describe("request id and error envelope", () => {
  it("every error status carries x-request-id and the same request_id in the body", async () => {
    const u = await newUser();
    const { workspace } = await newWorkspace();
    const errors = [
      [await call("GET", "/api/auth/me"), 401, "UNAUTHORIZED"],
      [await call("POST", "/api/workspaces", { token: u.token, body: {} }), 422, "VALIDATION_ERROR"],
      [await call("GET", `/api/workspaces/${workspace.id}`, { token: u.token }), 403, "FORBIDDEN"],
      [await call("GET", `/api/insights/${randomUUID()}`, { token: u.token }), 404, "NOT_FOUND"],
      [await call("POST", "/api/auth/redeem-code", { token: u.token, body: { code: "WHATEVER" } }), 409, "ALREADY_ACTIVE"],
      [await call("POST", "/api/webhooks/idp", { raw: { data: "{}", contentType: "application/json" } }), 400, "INVALID_SIGNATURE"],
    ] as const;
    for (const [res, status, code] of errors) expectEnvelope(res, status, code);
    const ids = errors.map(([res]) => res.body.request_id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("an unexpected failure is a 500 INTERNAL envelope that leaks no internals", async () => {
    const u = await newUser();
    const saved = process.env.TABLE_NAME;
    process.env.TABLE_NAME = `missing-${randomUUID()}`;
    let res;
    try {
      res = await call("GET", "/api/workspaces", { token: u.token });
    } finally {
      process.env.TABLE_NAME = saved;
    }
    expectEnvelope(res, 500, "INTERNAL");
    expect(res.text).not.toMatch(/ResourceNotFound|missing-|stack|at /);
    expect(res.body.detail).toMatch(/request id/);
    expect((await call("GET", "/api/workspaces", { token: u.token })).status).toBe(200);
  });

  it("successful responses carry x-request-id too", async () => {
    const u = await newUser();
    const res = await call("GET", "/api/workspaces", { token: u.token });
    expect(res.status).toBe(200);
    expect(headersOf(res)["x-request-id"]).toMatch(/\S+/);
  });

  it("validation errors list {loc, msg, type} for every problem", async () => {
    const u = await newUser();
    const res = await call("POST", "/api/workspaces", { token: u.token, body: { name: 1, product_name: 2 } });
    expectEnvelope(res, 422, "VALIDATION_ERROR");
    expect(res.body.errors).toHaveLength(2);
    for (const e of res.body.errors) expect(Object.keys(e).sort()).toEqual(["loc", "msg", "type"]);
    expect(res.body.errors.map((e: { loc: string[] }) => e.loc)).toEqual(expect.arrayContaining([["body", "name"], ["body", "product_name"]]));
  });

  it("a JSON body sent without a JSON content type is a 422, not a crash", async () => {
    const u = await newUser();
    const res = await call("POST", "/api/workspaces", { token: u.token, raw: { data: '{"name":"x"}', contentType: "text/plain" } });
    expectEnvelope(res, 422, "VALIDATION_ERROR");
  });
});

describe("security headers", () => {
  it.each([
    ["a JSON success", async () => call("GET", "/api/openapi.json")],
    ["an error", async () => call("GET", "/api/auth/me")],
  ])("are set on %s", async (_label, request) => {
    const h = headersOf(await request());
    expect(h["x-content-type-options"]).toBe("nosniff");
    expect(h["strict-transport-security"]).toMatch(/max-age=\d+/);
    expect(h["referrer-policy"]).toBe("no-referrer");
    expect(h["x-powered-by"]).toBeUndefined();
  });
});

describe("CORS", () => {
  it("a browser request gets Access-Control-Allow-Origin and can read x-request-id", async () => {
    const u = await newUser();
    const res = await call("GET", "/api/workspaces", { token: u.token, headers: { origin: "https://app.example.com" } });
    const h = headersOf(res);
    expect(h["access-control-allow-origin"]).toBeTruthy();
    expect(["*", "https://app.example.com"]).toContain(h["access-control-allow-origin"]);
    expect(h["access-control-expose-headers"]).toContain("x-request-id");
    expect(h["access-control-expose-headers"]).toContain("idempotent-replayed");
  });

  it("a preflight lets a browser send Idempotency-Key to the charged AI routes", async () => {
    const res = await call("OPTIONS", "/api/documents/draft", {
      headers: { origin: "https://app.example.com", "access-control-request-method": "POST", "access-control-request-headers": "authorization,content-type,idempotency-key" },
    });
    expect(res.status).toBeLessThan(300);
    expect(headersOf(res)["access-control-allow-headers"]?.split(",")).toContain("idempotency-key");
  });

  it("error responses carry CORS headers too, so the browser can read the envelope", async () => {
    const res = await call("GET", "/api/auth/me", { headers: { origin: "https://app.example.com" } });
    expect(res.status).toBe(401);
    expect(headersOf(res)["access-control-allow-origin"]).toBeTruthy();
  });
});

describe("gateway routing", () => {
  it("an unknown route is 404 in the envelope", async () => {
    const res = await call("GET", "/api/no-such-thing");
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ code: "NOT_FOUND", detail: expect.stringContaining("/api/no-such-thing"), request_id: expect.any(String) });
  });

  it("a known path under the wrong method is 405 in the envelope", async () => {
    const res = await call("DELETE", "/api/auth/me");
    expect(res.status).toBe(405);
    expect(res.body).toMatchObject({ code: "METHOD_NOT_ALLOWED", detail: expect.stringContaining("DELETE"), request_id: expect.any(String) });
  });

  it("a trailing slash reaches the same route", async () => {
    const u = await newUser();
    const res = await call("GET", "/api/workspaces/", { token: u.token });
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(0);
  });
});

describe("over a real socket (local gateway, npm start)", () => {
  it("serves success and error responses whose headers Node can send", async () => {
    const server = await startGateway(0);
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const ok = await fetch(`${base}/api/docs`, { headers: { origin: "https://app.example.com" } });
      const denied = await fetch(`${base}/api/auth/me`);

      expect(ok.status).toBe(200);
      expect(ok.headers.get("x-content-type-options")).toBe("nosniff");
      expect(ok.headers.get("access-control-allow-origin")).toBeTruthy();
      expect(ok.headers.get("x-powered-by")).toBeNull();
      expect(denied.status).toBe(401);
      const body = (await denied.json()) as { code: string; request_id: string };
      expect(body.code).toBe("UNAUTHORIZED");
      expect(denied.headers.get("x-request-id")).toBe(body.request_id);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
