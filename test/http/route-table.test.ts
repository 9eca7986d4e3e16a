/**
 * The route table is the contract read by the stacks, the local gateway, the OpenAPI generator and these tests
 * (DESIGN.md section 3). A route without schemas would ship undocumented and unvalidated: fail here instead.
 */
import { describe, expect, it } from "vitest";
import * as z from "zod";
import { readFile } from "node:fs/promises";
import { groups, matchRoute, routes, routesOf } from "../../functions/http/routes";
import type { RouteSpec } from "../../functions/lib/route";
import { openApiDocument } from "../../functions/lib/openapi";
import { pathParams } from "./_helpers";

const table = Object.entries(routes) as [string, RouteSpec][];

/**
 * Routes allowed to take no request body on a POST/PUT/PATCH, each with the reason.
 * Keep this short: an action with inputs must declare them.
 */
const BODYLESS_WRITES: Record<string, string> = {
  "research.reprocess": "an action on the source named in the path; it has no inputs",
  "generation.expand": "an AI action on the block named in the path; its inputs are the block and its document",
  "generation.challenge": "an AI action on the block named in the path; its inputs are the block and its document",
  "generation.simulate": "an AI action on the block named in the path; its inputs are the block and its document",
  "billing.sync": "spec 02: the workspace is a query parameter; it re-reads Stripe and takes no other input",
  "growth.syncSheets": "spec 02: no request body; it writes the whole waitlist to the spreadsheet",
  "growth.revokeAccess": "an admin action on the user named in the path (spec 01 Access status: active -> suspended)",
};

const keysOf = (schema: z.ZodType): string[] => {
  const shape = (schema as unknown as { shape?: Record<string, unknown> }).shape;
  return shape ? Object.keys(shape).sort() : [];
};

describe("route table", () => {
  it("has unique method+path pairs and ids shaped group.name", () => {
    const keys = table.map(([, r]) => `${r.method} ${r.path}`);
    expect(new Set(keys).size).toBe(keys.length);
    for (const [id, r] of table) expect(id.startsWith(`${r.group}.`), id).toBe(true);
  });

  it("every group has a handler module", async () => {
    for (const group of groups()) {
      const mod = (await import(`../../functions/http/${group}.ts`).catch((err: Error) => ({ error: err.message }))) as {
        handler?: unknown;
        error?: string;
      };
      expect(typeof mod.handler, `functions/http/${group}.ts: ${mod.error ?? "no handler export"}`).toBe("function");
    }
  });

  it("keeps each group's routes in routes/<group>.ts, which its handler imports instead of the whole table", async () => {
    for (const group of groups()) {
      const mod = (await import(`../../functions/http/routes/${group}.ts`)) as Record<string, Record<string, RouteSpec>>;
      // A kebab-case group ("pending-actions") exports its table under the camelCase name (pendingActionsRoutes).
      const name = `${group.replace(/-(\w)/g, (_, c: string) => c.toUpperCase())}Routes`;
      const own = mod[name];
      expect(own, `functions/http/routes/${group}.ts exports ${name}`).toBeDefined();
      expect(Object.keys(own!).sort()).toEqual(routesOf(group).map(([id]) => id).sort());
      // The handler must not pull in the whole table: a cold start would build every group's schemas.
      const source = await readFile(new URL(`../../functions/http/${group}.ts`, import.meta.url), "utf8");
      expect(source, `functions/http/${group}.ts`).toContain(`from "./routes/${group}"`);
      expect(source, `functions/http/${group}.ts imports the whole route table`).not.toMatch(/from "\.\/routes"/);
    }
  });

  it.each(table)("%s declares a schema for every response that has content", (_id, r) => {
    const statuses = Object.keys(r.responses).map(Number);
    expect(statuses.length).toBeGreaterThan(0);
    for (const status of statuses) {
      // A redirect (the OAuth callbacks' 302 to the frontend) has no content; every other answer is a success.
      const redirect = status >= 300 && status < 400;
      expect((status >= 200 && status < 300) || redirect, `status ${status} is not a success`).toBe(true);
      const schema = r.responses[status];
      if (status === 204 || redirect) expect(schema, `${status} has no content`).toBeNull();
      else expect(schema, `response ${status} needs a zod schema`).toBeInstanceOf(z.ZodType);
    }
  });

  it.each(table.filter(([, r]) => ["POST", "PUT", "PATCH"].includes(r.method)))("%s declares a body schema", (id, r) => {
    if (BODYLESS_WRITES[id]) {
      expect(r.body, `${id} is listed as body-less but now has a body: drop it from BODYLESS_WRITES`).toBeUndefined();
      return;
    }
    expect(r.body, `${r.method} ${r.path} needs a body schema (or a justified BODYLESS_WRITES entry)`).toBeInstanceOf(z.ZodType);
  });

  it.each(table)("%s has a params schema naming exactly its path parameters", (_id, r) => {
    const names = pathParams(r.path).sort();
    if (names.length === 0) {
      expect(r.params, "params schema on a path without parameters").toBeUndefined();
      return;
    }
    expect(r.params, `${r.path} needs a params schema`).toBeInstanceOf(z.ZodType);
    expect(keysOf(r.params!)).toEqual(names);
  });

  it.each(table.filter(([, r]) => r.workspaceScope === "path"))("%s (scope: path) has workspace_id in its path", (_id, r) => {
    expect(pathParams(r.path)).toContain("workspace_id");
  });

  it.each(table)("%s converts to OpenAPI (every schema is describable)", (id, r) => {
    let error: string | undefined;
    try {
      openApiDocument(undefined, { [id]: r });
    } catch (err) {
      error = (err as Error).message;
    }
    expect(error, `${id}: give the offending zod schema OpenAPI metadata, e.g. .meta({ type: "string", format: "binary" })`).toBeUndefined();
  });

  it("no GET or DELETE route declares a body", () => {
    const offenders = table.filter(([, r]) => (r.method === "GET" || r.method === "DELETE") && r.body).map(([id]) => id);
    expect(offenders).toEqual([]);
  });

  it("the exception list names only routes that exist", () => {
    expect(Object.keys(BODYLESS_WRITES).filter((id) => !(id in routes))).toEqual([]);
  });

  it("matchRoute prefers literal segments and reports method mismatches", () => {
    const docs = matchRoute("GET", "/api/docs");
    expect(docs && docs !== "methodMismatch" && docs.id).toBe("docs.page");
    const asset = matchRoute("GET", "/api/docs/swagger-ui.css");
    expect(asset && asset !== "methodMismatch" && asset.pathParameters).toEqual({ asset: "swagger-ui.css" });
    expect(matchRoute("PUT", "/api/auth/me")).toBe("methodMismatch");
    expect(matchRoute("GET", "/api/nothing-here")).toBeNull();
  });
});
