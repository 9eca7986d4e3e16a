/**
 * Values a JSON body may carry (docs/decisions.md "Values a JSON body may carry"): numbers DynamoDB cannot store as
 * given, strings and keys that are not well-formed Unicode, and a `null` body are refused with a 422 naming them,
 * before any route writes anything (found by fuzzing every route: each was a 500, some after part of a batch).
 */
import { describe, expect, it } from "vitest";
import { unstorableValues } from "../../core/json-object";
import { call, newWorkspace } from "../support/api";
import { expectEnvelope } from "./_helpers";

describe("values a JSON body may carry", () => {
  it("a number above 2^53 or below 1e-130 anywhere in a body is 422 at its place; nothing is written", async () => {
    const { owner, workspace } = await newWorkspace("Numbers");
    const doc = await call("POST", "/api/documents", { token: owner.token, body: { workspace_id: workspace.id, document_type: "memo", title: "Numbers", content: "x" } });
    expect(doc.status, doc.text).toBe(201);
    for (const n of [1e16, 9007199254740993, -1e308, 1e-320]) {
      const res = await call("PATCH", `/api/documents/${doc.body.id}`, { token: owner.token, body: { title: "Changed", metadata: { source: { n } } } });
      expectEnvelope(res, 422, "VALIDATION_ERROR");
      expect(res.body.errors[0].loc).toEqual(["body", "metadata", "source", "n"]);
    }
    expect((await call("GET", `/api/documents/${doc.body.id}`, { token: owner.token })).body).toMatchObject({ title: "Numbers", version: doc.body.version });
    const rec = await call("POST", "/api/recommendations", { token: owner.token, body: { workspace_id: workspace.id, title: "t", description: "d", effort_weeks: 1e-320 } });
    expectEnvelope(rec, 422, "VALIDATION_ERROR");
    expect(rec.body.errors[0].loc).toEqual(["body", "effort_weeks"]);
    // What DynamoDB stores is still taken: 0, 2^53 - 1, 1e-130.
    const ok = await call("PATCH", `/api/documents/${doc.body.id}`, { token: owner.token, body: { metadata: { a: 0, b: Number.MAX_SAFE_INTEGER, c: 1e-130, d: -2.5 } } });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.metadata).toMatchObject({ a: 0, b: Number.MAX_SAFE_INTEGER, c: 1e-130, d: -2.5 });
  });

  it("a string or key with a lone surrogate is 422 (it would be stored changed); a well-formed one with emoji is kept", async () => {
    const { owner, workspace } = await newWorkspace("Unicode");
    const bad = await call("POST", "/api/documents", { token: owner.token, body: { workspace_id: workspace.id, document_type: "memo", title: "t", content: `a\ud800b${"y".repeat(70_000)}` } });
    expectEnvelope(bad, 422, "VALIDATION_ERROR");
    expect(bad.body.errors[0].loc).toEqual(["body", "content"]);
    const key = await call("POST", "/api/documents", { token: owner.token, body: { workspace_id: workspace.id, document_type: "memo", title: "t", content: "c", metadata: { "k\udc00": 1 } } });
    expectEnvelope(key, 422, "VALIDATION_ERROR");
    const good = await call("POST", "/api/documents", { token: owner.token, body: { workspace_id: workspace.id, document_type: "memo", title: "Emoji 😀 ok", content: "مرحبا ‏ 😀" } });
    expect(good.status, good.text).toBe(201);
    expect(good.body.title).toBe("Emoji 😀 ok");
  });

  it("a JSON null body is 422, not read as an empty update", async () => {
    const { owner, workspace } = await newWorkspace("Null body");
    const before = (await call("GET", `/api/workspaces/${workspace.id}`, { token: owner.token })).body.updated_at as string;
    const res = await call("PATCH", `/api/workspaces/${workspace.id}`, { token: owner.token, raw: { data: "null", contentType: "application/json" } });
    expectEnvelope(res, 422, "VALIDATION_ERROR");
    expect(res.body.errors[0].loc).toEqual(["body"]);
    expect((await call("GET", `/api/workspaces/${workspace.id}`, { token: owner.token })).body.updated_at).toBe(before);
  });

  it("walks any depth without recursion and reports at most 20 problems", () => {
    let deep: unknown = 1e-200;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(unstorableValues(deep)).toHaveLength(1);
    expect(unstorableValues(Array.from({ length: 500 }, () => 1e300))).toHaveLength(20);
    expect(unstorableValues({ a: [1, "x", null, true, { b: 0 }] })).toEqual([]);
  });
});
