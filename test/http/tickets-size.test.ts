/**
 * `POST /api/execution/generate` answers no more than one answer may carry (Lambda: 6 MB): its tickets are cut as the
 * lists are (`fitResponse`), `total` counting every ticket written. Tickets as large as that take minutes to build
 * here, so the budget is shrunk: `fitResponse` is the real one, given a budget that fits two of these tickets.
 */
import { describe, expect, it, vi } from "vitest";
import { call, newWorkspace } from "../support/api";

const budget = vi.hoisted(() => ({ bytes: undefined as number | undefined }));
vi.mock("../../core/response-size", async (importOriginal) => {
  const real = await importOriginal<typeof import("../../core/response-size")>();
  return { ...real, fitResponse: <T>(items: readonly T[], maxBytes?: number) => real.fitResponse(items, budget.bytes ?? maxBytes) };
});

describe("generate heavier than one answer may be", () => {
  it("answers the tickets that fit, in block order; total counts every ticket written; the list has them all", async () => {
    const { owner, workspace } = await newWorkspace("Heavy generate");
    const token = owner.token;
    const doc = await call("POST", "/api/documents", { token, body: { workspace_id: workspace.id, document_type: "prd", title: "Big", content: "# Big\n" } });
    expect(doc.status, doc.text).toBe(201);
    for (let i = 0; i < 6; i++) {
      const r = await call("POST", `/api/documents/${doc.body.id}/blocks`, { token, body: { block_type: "risk", title: `Risk ${i}`, content: { risk: `Risk number ${i} happens.`, likelihood: "medium", impact: "low", mitigation: "Mitigate it" } } });
      expect(r.status, r.text).toBe(201);
    }
    const all = await call("POST", "/api/execution/generate", { token, body: { workspace_id: workspace.id, document_id: doc.body.id } });
    expect(all.status, all.text).toBe(200);
    expect(all.body.tickets).toHaveLength(6);
    // A budget of two of these tickets' bytes and a bit (with the skipped and removed lists beside them).
    const one = Math.max(...all.body.tickets.map((t: unknown) => Buffer.byteLength(JSON.stringify(JSON.stringify(t)))));
    budget.bytes = 2 * one + 100;
    try {
      const gen = await call("POST", "/api/execution/generate", { token, body: { workspace_id: workspace.id, document_id: doc.body.id } });
      expect(gen.status, gen.text).toBe(200);
      expect(gen.body.total).toBe(6);
      expect(gen.body.tickets.map((t: { id: string }) => t.id)).toEqual(all.body.tickets.slice(0, 2).map((t: { id: string }) => t.id));
    } finally {
      budget.bytes = undefined;
    }
    const listed = await call("GET", `/api/execution/${doc.body.id}/tickets`, { token });
    expect(listed.body.total).toBe(6);
  });
});
