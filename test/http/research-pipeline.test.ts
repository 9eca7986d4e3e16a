import { describe, expect, it } from "vitest";
import { call, newWorkspace } from "../support/api";
import { multipart, realFile, waitFor } from "../support/multipart";

async function upload(token: string, workspaceId: string, file: { name: string; data: Buffer }, type: string, sourceType = "survey") {
  const body = await multipart({ workspace_id: workspaceId, source_type: sourceType, title: file.name }, { ...file, type });
  return call("POST", "/api/research/upload", { token, raw: body });
}

const settled = (token: string, id: string) =>
  waitFor(async () => {
    const res = await call("GET", `/api/research/sources/${id}`, { token });
    return res.body.processing_status !== "pending" ? res.body : undefined;
  });

describe("research pipeline (multipart -> S3 event -> state machine)", () => {
  it("extracts a real CSV survey export to completed with its responses", async () => {
    const { owner, workspace } = await newWorkspace();
    const file = await realFile("jupyter/surveys/mybinder-user-survey-feb-2020.csv");
    const res = await upload(owner.token, workspace.id, file, "text/csv");
    expect(res.status).toBe(201);
    expect(res.body.processing_status).toBe("pending");
    const done = await settled(owner.token, res.body.id);
    expect(done.processing_status).toBe("completed");
    expect(done.extracted_text.length).toBeGreaterThan(1000);
    expect(done.unit_count).toBeGreaterThan(10);
  });

  it("a truncated PDF fails with a reason and can be reprocessed", async () => {
    const { owner, workspace } = await newWorkspace();
    const pdf = await realFile("jupyter/docs/czi-eoss-jupyter-accessibility-proposal.pdf");
    const truncated = { name: "truncated.pdf", data: pdf.data.subarray(0, Math.floor(pdf.data.length / 3)) };
    const res = await upload(owner.token, workspace.id, truncated, "application/pdf", "other");
    expect(res.status).toBe(201);
    const failed = await settled(owner.token, res.body.id);
    expect(failed.processing_status).toBe("failed");
    expect(failed.processing_error).toMatch(/PDF/i);
    const again = await call("POST", `/api/research/sources/${res.body.id}/reprocess`, { token: owner.token });
    expect(again.status).toBe(200);
    expect(again.body.processing_status).toBe("pending");
    const refailed = await settled(owner.token, res.body.id);
    expect(refailed.processing_status).toBe("failed");
  });
});
