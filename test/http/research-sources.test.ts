/**
 * Research sources after upload (spec 01 Research sources endpoints, Research source processing, Errors, Limits;
 * docs/decisions.md Research sources): list (filters, limit default 200 max 500, offset, total, newest first),
 * get (extracted_text, transcript), delete (file and derived files gone, usage slot freed), reprocess
 * (failed -> pending -> runs again; completed -> 422 ALREADY_PROCESSED), the plan's research-source limit (402
 * USAGE_LIMIT_EXCEEDED), the subscription gate (402 SUBSCRIPTION_REQUIRED) and membership on every route.
 * Uploads go through the real multipart route; extraction runs on the local Step Functions runner.
 */
import { randomUUID } from "node:crypto";
import { ListObjectsV2Command } from "@aws-sdk/client-s3";
import { describe, expect, it } from "vitest";
import { s3Client } from "../../core/storage/client";
import { db } from "../../core/db/service";
import { dynamoClient } from "../../core/db/client";
import { Config } from "../../core/config";
import { extractionKey } from "../../core/research";
import { getObject, putObject } from "../../core/storage";
import { PLANS } from "../../core/billing/plans";
import { call, newUser, newWorkspace } from "../support/api";
import { setAccount } from "../support/billing";
import { realFile, uploadResearch, waitFor } from "../support/multipart";
import { expectEnvelope, partitionItems } from "./_helpers";
import { conflictTransactions } from "../support/throttle";

// ---- helpers ----

const upload = uploadResearch;

/** Upload a small Markdown note and return the created source (201 asserted). */
async function uploadNote(token: string, workspaceId: string, name = `note-${randomUUID().slice(0, 6)}.md`, sourceType = "interview") {
  const res = await upload(token, workspaceId, { name, data: Buffer.from(`# ${name}\n\nThe onboarding checklist is confusing.\n`) }, "text/markdown", sourceType);
  expect(res.status, res.text).toBe(201);
  return res.body;
}

const settled = (token: string, id: string) =>
  waitFor(async () => {
    const res = await call("GET", `/api/research/sources/${id}`, { token });
    return res.body.processing_status !== "pending" ? res.body : undefined;
  }, 90_000);

const list = (token: string, query: Record<string, string | number | undefined>) => call("GET", "/api/research/sources", { token, query });

async function bucketKeys(prefix: string): Promise<string[]> {
  const out = await (await s3Client()).send(new ListObjectsV2Command({ Bucket: Config.bucketName(), Prefix: prefix }));
  return (out.Contents ?? []).map((o) => o.Key!);
}

async function sourceItems(workspaceId: string) {
  return (await partitionItems(`ws#${workspaceId}`)).filter((i) => String(i.sk).startsWith("source#"));
}

async function usageCount(workspaceId: string): Promise<number> {
  return ((await partitionItems(`ws#${workspaceId}`)).find((i) => i.sk === "usage")?.research_sources as number | undefined) ?? 0;
}

/** Set the workspace's research-source usage counter (to reach the plan limit without hundreds of uploads). */
const setUsage = (workspaceId: string, count: number) => db().entities.usage.put({ workspace_id: workspaceId, research_sources: count }).go();

const TRIAL_MAX = PLANS.trial.max_research_sources!;

/** A workspace for tests that only read and store nothing. */
let shared: Awaited<ReturnType<typeof newWorkspace>> | undefined;

// ---- list ----

describe("GET /api/research/sources", () => {
  it("lists newest first with total, filters by source_type and processing_status, pages with limit and offset", async () => {
    const { owner, workspace } = await newWorkspace();
    const interview = await uploadNote(owner.token, workspace.id, "interview.md", "interview");
    const survey = await upload(owner.token, workspace.id, { name: "survey.csv", data: Buffer.from("id,What would you change?\n1,Faster startup\n2,Dark mode\n") }, "text/csv", "survey");
    const broken = await upload(owner.token, workspace.id, { name: "tickets.json", data: Buffer.from('{"tickets": [1, 2,') }, "application/json", "support_ticket");
    expect([survey.status, broken.status]).toEqual([201, 201]);
    await Promise.all([interview.id, survey.body.id, broken.body.id].map((id) => settled(owner.token, id)));

    const all = await list(owner.token, { workspace_id: workspace.id });
    expect(all.status).toBe(200);
    expect(all.body.total).toBe(3);
    expect(all.body.sources.map((s: any) => s.id)).toEqual([broken.body.id, survey.body.id, interview.id]);
    expect(all.body.sources[0]).not.toHaveProperty("extracted_text");
    expect(all.body.sources[0]).toMatchObject({ processing_status: "failed", source_type: "support_ticket", file_name: "tickets.json" });
    expect(all.body.sources[0].processing_error).toMatch(/JSON/);

    const surveys = await list(owner.token, { workspace_id: workspace.id, source_type: "survey" });
    expect(surveys.body).toMatchObject({ total: 1, sources: [{ id: survey.body.id, processing_status: "completed" }] });
    const failed = await list(owner.token, { workspace_id: workspace.id, processing_status: "failed" });
    expect(failed.body.sources.map((s: any) => s.id)).toEqual([broken.body.id]);
    const both = await list(owner.token, { workspace_id: workspace.id, processing_status: "completed", source_type: "interview" });
    expect(both.body.sources.map((s: any) => s.id)).toEqual([interview.id]);
    const none = await list(owner.token, { workspace_id: workspace.id, processing_status: "pending" });
    expect(none.body).toEqual({ sources: [], total: 0 });

    const page = await list(owner.token, { workspace_id: workspace.id, limit: 1, offset: 1 });
    expect(page.body.total).toBe(3);
    expect(page.body.sources.map((s: any) => s.id)).toEqual([survey.body.id]);
    const past = await list(owner.token, { workspace_id: workspace.id, offset: 3 });
    expect(past.body).toEqual({ sources: [], total: 3 });
  });

  it.each([
    ["limit 501", { limit: 501 }],
    ["limit 0", { limit: 0 }],
    ["a negative offset", { offset: -1 }],
    ["an unknown processing_status", { processing_status: "done" }],
    ["an unknown source_type", { source_type: "podcast" }],
    ["no workspace_id", { workspace_id: undefined }],
  ])("%s is 422 VALIDATION_ERROR", async (_what, query) => {
    const { owner, workspace } = (shared ??= await newWorkspace());
    const res = await list(owner.token, { workspace_id: workspace.id, ...query });
    expectEnvelope(res, 422, "VALIDATION_ERROR");
  });

  it("reads the workspace's partition strongly consistent, as the insight and recommendation lists do", async () => {
    const { owner, workspace } = await newWorkspace();
    // DynamoDB Local is always consistent: what is checked is that the Query asks for it.
    const queries: Record<string, unknown>[] = [];
    const name = `sourceListQueries-${randomUUID()}`;
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        if (/^Query/.test(context.commandName ?? "") && JSON.stringify(args.input).includes(workspace.id)) queries.push(args.input as Record<string, unknown>);
        return next(args);
      },
      { step: "initialize", name },
    );
    try {
      expect((await list(owner.token, { workspace_id: workspace.id })).status).toBe(200);
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
    expect(queries.length).toBeGreaterThan(0);
    for (const q of queries) expect(q).toMatchObject({ ConsistentRead: true });
  });

  it("limit defaults to 200 and goes up to 500", async () => {
    const { owner, workspace } = await newWorkspace();
    // 201 sources written straight to the table (uploading them would take the whole test budget).
    const t0 = Date.parse("2024-01-01T00:00:00.000Z");
    const items = Array.from({ length: 201 }, (_, i) => {
      const id = randomUUID();
      return {
        id, workspace_id: workspace.id, source_type: "feedback" as const, title: `Review ${i}`, file_name: `r${i}.txt`,
        file_key: `workspaces/${workspace.id}/sources/${id}/original/r${i}.txt`, file_type: "text/plain", file_kind: "text",
        file_size_bytes: 10, upload_method: "multipart" as const, processing_status: "completed" as const, created_by: owner.id,
        created_at: new Date(t0 + i * 1000).toISOString(),
      };
    });
    await db().entities.researchSource.put(items).go();

    const first = await list(owner.token, { workspace_id: workspace.id });
    expect(first.body.total).toBe(201);
    expect(first.body.sources).toHaveLength(200);
    expect(first.body.sources[0].title).toBe("Review 200");
    const max = await list(owner.token, { workspace_id: workspace.id, limit: 500 });
    expect(max.body.sources).toHaveLength(201);
    const rest = await list(owner.token, { workspace_id: workspace.id, offset: 200 });
    expect(rest.body.sources.map((s: any) => s.title)).toEqual(["Review 0"]);
  });
});

// ---- get ----

describe("GET /api/research/sources/{id}", () => {
  it("returns the full source with extracted_text; transcript for a transcript file", async () => {
    const { owner, workspace } = await newWorkspace();
    const vtt = { name: "call.vtt", data: Buffer.from("WEBVTT\n\n1\n00:00:01.000 --> 00:00:04.000\nAlex: The export is slow.\n\n2\n00:00:05.000 --> 00:00:07.500\nSam: Since the last update?\n") };
    const res = await upload(owner.token, workspace.id, vtt, "text/vtt");
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ processing_status: "pending", file_type: "text/vtt", file_size_bytes: vtt.data.length, workspace_id: workspace.id });
    const done = await settled(owner.token, res.body.id);
    expect(done).toMatchObject({
      id: res.body.id,
      processing_status: "completed",
      processing_error: null,
      title: "call.vtt",
      file_name: "call.vtt",
      file_url: `workspaces/${workspace.id}/sources/${res.body.id}/original/call.vtt`,
      created_at: res.body.created_at,
      unit_count: 2,
    });
    expect(done.transcript).toBe("[00:00:01.000] Alex: The export is slow.\n[00:00:05.000] Sam: Since the last update?");
    expect(done.extracted_text).toContain("Alex: The export is slow.");
    expect(done.char_count).toBe(done.extracted_text.length);

    const note = await uploadNote(owner.token, workspace.id);
    const noteDone = await settled(owner.token, note.id);
    expect(noteDone.extracted_text).toContain("The onboarding checklist is confusing.");
    expect(noteDone.transcript).toBeNull();
  });

  it("a text too large for one response is cut at its beginning's end, with text_truncated; the response stays under Lambda's 6 MB", async () => {
    const { owner, workspace } = await newWorkspace();
    const note = await uploadNote(owner.token, workspace.id);
    const done = await settled(owner.token, note.id);
    expect(done.text_truncated).toBe(false);
    // A 32,000,000-character text is allowed; 6,600,000 with many quotes, backslashes and line breaks makes the point:
    // each is escaped in the JSON body, and again where the Lambda's answer carries that body as a string.
    const huge = 'He said "no" \\ "it "never" ends"\n'.repeat(200_000);
    const key = extractionKey(workspace.id, note.id);
    const extraction = JSON.parse((await getObject(key))!.toString("utf8"));
    await putObject(key, JSON.stringify({ ...extraction, extracted_text: huge }), "application/json");
    const res = await call("GET", `/api/research/sources/${note.id}`, { token: owner.token });
    expect(res.status).toBe(200);
    // The proxy result carries the body as a JSON string: that is what Lambda's 6 MB counts.
    expect(Buffer.byteLength(JSON.stringify({ statusCode: 200, body: res.text }))).toBeLessThan(6 * 1024 * 1024);
    expect(res.body.text_truncated).toBe(true);
    expect(res.body.extracted_text.length).toBeGreaterThan(1_000_000);
    expect(huge.startsWith(res.body.extracted_text)).toBe(true);
  });

  it("an unknown id is 404, a malformed id 422, and a non-member gets the same 404 on get, delete and reprocess (403 on the workspace's list)", async () => {
    const { owner, workspace } = await newWorkspace();
    expectEnvelope(await call("GET", `/api/research/sources/${randomUUID()}`, { token: owner.token }), 404, "NOT_FOUND");
    expectEnvelope(await call("DELETE", `/api/research/sources/${randomUUID()}`, { token: owner.token }), 404, "NOT_FOUND");
    expectEnvelope(await call("POST", `/api/research/sources/${randomUUID()}/reprocess`, { token: owner.token }), 404, "NOT_FOUND");
    expectEnvelope(await call("GET", "/api/research/sources/not-a-uuid", { token: owner.token }), 422, "VALIDATION_ERROR");

    const source = await uploadNote(owner.token, workspace.id);
    const stranger = await newUser();
    expectEnvelope(await call("GET", `/api/research/sources/${source.id}`, { token: stranger.token }), 404, "NOT_FOUND");
    expectEnvelope(await call("DELETE", `/api/research/sources/${source.id}`, { token: stranger.token }), 404, "NOT_FOUND");
    expectEnvelope(await call("POST", `/api/research/sources/${source.id}/reprocess`, { token: stranger.token }), 404, "NOT_FOUND");
    expectEnvelope(await list(stranger.token, { workspace_id: workspace.id }), 403, "FORBIDDEN");
    expect(await sourceItems(workspace.id)).toHaveLength(1);

    // Once added as a member, the same user can read it.
    const added = await call("POST", `/api/workspaces/${workspace.id}/members`, { token: owner.token, body: { email: stranger.email } });
    expect(added.status, added.text).toBe(201);
    expect((await call("GET", `/api/research/sources/${source.id}`, { token: stranger.token })).status).toBe(200);
  });
});

// ---- delete ----

describe("DELETE /api/research/sources/{id}", () => {
  it("removes the item, the file and its derived files, and gives the usage slot back", async () => {
    const { owner, workspace } = await newWorkspace();
    const keep = await uploadNote(owner.token, workspace.id, "keep.md");
    const gone = await uploadNote(owner.token, workspace.id, "gone.md");
    await Promise.all([settled(owner.token, keep.id), settled(owner.token, gone.id)]);
    const prefix = `workspaces/${workspace.id}/sources/${gone.id}/`;
    expect(await bucketKeys(prefix)).toEqual(expect.arrayContaining([`${prefix}original/gone.md`, `${prefix}extraction.json`]));
    expect(await usageCount(workspace.id)).toBe(2);

    const res = await call("DELETE", `/api/research/sources/${gone.id}`, { token: owner.token });
    expect(res.status).toBe(204);
    expect(res.text).toBe("");
    expect(await bucketKeys(prefix)).toEqual([]);
    expect((await sourceItems(workspace.id)).map((i) => i.id)).toEqual([keep.id]);
    expect(await usageCount(workspace.id)).toBe(1);
    expectEnvelope(await call("GET", `/api/research/sources/${gone.id}`, { token: owner.token }), 404, "NOT_FOUND");
    expect((await list(owner.token, { workspace_id: workspace.id })).body.total).toBe(1);
    // The other source's files are untouched.
    expect((await bucketKeys(`workspaces/${workspace.id}/sources/${keep.id}/`)).length).toBeGreaterThanOrEqual(2);
  });

  it("a multipart body sent with the delete (which takes no body) is ignored, not parsed: 204, not a 422", async () => {
    const { owner, workspace } = await newWorkspace();
    const gone = await uploadNote(owner.token, workspace.id, "stray-body.md");
    const res = await call("DELETE", `/api/research/sources/${gone.id}`, {
      token: owner.token,
      raw: { data: "not a form at all", contentType: "multipart/form-data; boundary=x" },
    });
    expect(res.status, res.text).toBe(204);
    expectEnvelope(await call("GET", `/api/research/sources/${gone.id}`, { token: owner.token }), 404, "NOT_FOUND");
  });

  it("a derived file a pipeline step writes while the delete runs (it found the item just before it went) is deleted too", async () => {
    const { owner, workspace } = await newWorkspace();
    const gone = await uploadNote(owner.token, workspace.id, "late.md");
    await settled(owner.token, gone.id);
    const prefix = `workspaces/${workspace.id}/sources/${gone.id}/`;
    const name = "lateExtractionWrite";
    let wrote = false;
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        if (!wrote && /^TransactWrite/.test(context.commandName ?? "") && JSON.stringify(args.input).includes(gone.id)) {
          wrote = true;
          // A Parse that passed its check before the delete began writes its extraction now.
          await putObject(extractionKey(workspace.id, gone.id), Buffer.from("{}"), "application/json");
        }
        return next(args);
      },
      { step: "initialize", name },
    );
    try {
      expect((await call("DELETE", `/api/research/sources/${gone.id}`, { token: owner.token })).status).toBe(204);
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
    expect(wrote).toBe(true);
    expect(await bucketKeys(prefix)).toEqual([]);
  });

  it("a delete interrupted after the files went leaves no source without its files: the item and its slot went first", async () => {
    const { owner, workspace } = await newWorkspace();
    const gone = await uploadNote(owner.token, workspace.id, "interrupted.md");
    await settled(owner.token, gone.id);
    expect(await usageCount(workspace.id)).toBe(1);
    const client = await s3Client();
    const name = "dieAfterPurge";
    // The process dies right after its first purge of the files (the object store's delete went through).
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const out = await next(args);
        if (context.commandName === "DeleteObjectsCommand") throw new Error("the process died");
        return out;
      },
      { step: "initialize", name },
    );
    try {
      expect((await call("DELETE", `/api/research/sources/${gone.id}`, { token: owner.token })).status).toBe(500);
    } finally {
      client.middlewareStack.remove(name);
    }
    // Not a completed source without its text (which synthesis refuses and reprocess cannot restart): gone, slot back.
    expectEnvelope(await call("GET", `/api/research/sources/${gone.id}`, { token: owner.token }), 404, "NOT_FOUND");
    expect(await sourceItems(workspace.id)).toEqual([]);
    expect(await usageCount(workspace.id)).toBe(0);
    expect(await bucketKeys(`workspaces/${workspace.id}/sources/${gone.id}/`)).toEqual([]);
  });

  it("two deletes racing each other give the slot back once", async () => {
    const { owner, workspace } = await newWorkspace();
    const a = await uploadNote(owner.token, workspace.id);
    await uploadNote(owner.token, workspace.id);
    await settled(owner.token, a.id);
    const [first, second] = await Promise.all([
      call("DELETE", `/api/research/sources/${a.id}`, { token: owner.token }),
      call("DELETE", `/api/research/sources/${a.id}`, { token: owner.token }),
    ]);
    expect([first.status, second.status].every((s) => s === 204 || s === 404)).toBe(true);
    expect(await usageCount(workspace.id)).toBe(1);
    expect(await sourceItems(workspace.id)).toHaveLength(1);
  });
});

// ---- reprocess ----

/** A source whose extraction failed: a real PDF cut to its first third, uploaded and settled. */
async function failedSource(token: string, workspaceId: string) {
  const pdf = await realFile("jupyter/docs/czi-eoss-jupyter-accessibility-proposal.pdf");
  const truncated = { name: "truncated.pdf", data: pdf.data.subarray(0, Math.floor(pdf.data.length / 3)) };
  const res = await upload(token, workspaceId, truncated, "application/pdf", "other");
  expect(res.status).toBe(201);
  return { res, failed: await settled(token, res.body.id) };
}

describe("POST /api/research/sources/{id}/reprocess", () => {
  it("a failed source goes back to pending and runs again; a completed one is 422 ALREADY_PROCESSED", async () => {
    const { owner, workspace } = await newWorkspace();
    const { res, failed } = await failedSource(owner.token, workspace.id);
    expect(failed.processing_status).toBe("failed");
    expect(failed.processing_error).toMatch(/PDF/i);

    const again = await call("POST", `/api/research/sources/${res.body.id}/reprocess`, { token: owner.token });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: res.body.id, processing_status: "pending", processing_error: null });
    const attempt = (await sourceItems(workspace.id))[0]!.processing_attempt;
    expect(attempt).toBe(1);
    const refailed = await settled(owner.token, res.body.id);
    expect(refailed.processing_status).toBe("failed");
    expect(refailed.processed_at > failed.processed_at).toBe(true);

    const note = await uploadNote(owner.token, workspace.id);
    const done = await settled(owner.token, note.id);
    expect(done.processing_status).toBe("completed");
    const refused = await call("POST", `/api/research/sources/${note.id}/reprocess`, { token: owner.token });
    expectEnvelope(refused, 422, "ALREADY_PROCESSED");
    expect((await call("GET", `/api/research/sources/${note.id}`, { token: owner.token })).body).toMatchObject({
      processing_status: "completed",
      processed_at: done.processed_at,
    });
  });

  it("a failed source sent back to pending loses its processed_at with its error (a pending source has neither)", async () => {
    const { owner, workspace } = await newWorkspace();
    const { res, failed } = await failedSource(owner.token, workspace.id);
    expect(failed).toMatchObject({ processing_status: "failed", processed_at: expect.any(String) });

    const again = await call("POST", `/api/research/sources/${res.body.id}/reprocess`, { token: owner.token });

    expect(again.status, again.text).toBe(200);
    expect(again.body).toMatchObject({ processing_status: "pending", processing_error: null, processed_at: null });
    await settled(owner.token, res.body.id); // the new attempt ends before the test does
  });
});

// ---- plan limit and subscription ----

describe("plan limit and subscription gate", () => {
  it(`with the trial's ${TRIAL_MAX} research sources reached, the next upload is 402 USAGE_LIMIT_EXCEEDED; deleting one frees the slot`, async () => {
    const { owner, workspace } = await newWorkspace();
    const existing = await uploadNote(owner.token, workspace.id);
    await settled(owner.token, existing.id);
    await setUsage(workspace.id, TRIAL_MAX - 1);

    const last = await uploadNote(owner.token, workspace.id);
    expect(await usageCount(workspace.id)).toBe(TRIAL_MAX);
    const over = await upload(owner.token, workspace.id, { name: "over.md", data: Buffer.from("# Over\n\nOne too many.\n") }, "text/markdown");
    expectEnvelope(over, 402, "USAGE_LIMIT_EXCEEDED");
    expect(over.body.limit).toBe(TRIAL_MAX);
    const overUrl = await call("POST", "/api/research/upload-url", {
      token: owner.token,
      body: { workspace_id: workspace.id, source_type: "interview", title: "Over", file_name: "over.md", content_type: "text/markdown", file_size_bytes: 20 },
    });
    expectEnvelope(overUrl, 402, "USAGE_LIMIT_EXCEEDED");
    // The refused uploads stored nothing.
    expect((await sourceItems(workspace.id)).map((i) => i.id).sort()).toEqual([existing.id, last.id].sort());
    expect(await usageCount(workspace.id)).toBe(TRIAL_MAX);
    expect((await bucketKeys(`workspaces/${workspace.id}/`)).filter((k) => k.includes("over.md"))).toEqual([]);

    await settled(owner.token, last.id);
    expect((await call("DELETE", `/api/research/sources/${existing.id}`, { token: owner.token })).status).toBe(204);
    expect(await usageCount(workspace.id)).toBe(TRIAL_MAX - 1);
    const again = await upload(owner.token, workspace.id, { name: "again.md", data: Buffer.from("# Again\n\nFits now.\n") }, "text/markdown");
    expect(again.status, again.text).toBe(201);
  });

  it("an upload whose transaction loses to a concurrent one on the usage counter is tried again, not refused 402; a delete likewise removes the item", async () => {
    const { owner, workspace } = await newWorkspace();
    // DynamoDB cancels a transaction that meets another on the same item (TransactionConflict); DynamoDB Local
    // serializes instead, so the upload's and then the delete's next transaction is cancelled that way.
    const conflict = conflictTransactions([workspace.id, "research_sources"]);
    try {
      const note = await uploadNote(owner.token, workspace.id);
      expect(conflict.left).toBe(0);
      await settled(owner.token, note.id);
      conflict.left = 1;
      expect((await call("DELETE", `/api/research/sources/${note.id}`, { token: owner.token })).status).toBe(204);
      expect(conflict.left).toBe(0);
    } finally {
      conflict.remove();
    }
    expect(await sourceItems(workspace.id)).toHaveLength(0);
    expect(await usageCount(workspace.id)).toBe(0);
  });

  it("concurrent uploads cannot overshoot the limit", async () => {
    const { owner, workspace } = await newWorkspace();
    await setUsage(workspace.id, TRIAL_MAX - 2);
    const results = await Promise.all(
      [1, 2, 3, 4].map((n) => upload(owner.token, workspace.id, { name: `n${n}.md`, data: Buffer.from(`# Note ${n}\n\nText.\n`) }, "text/markdown")),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 201, 402, 402]);
    expect(await usageCount(workspace.id)).toBe(TRIAL_MAX);
    expect(await sourceItems(workspace.id)).toHaveLength(2);
    await Promise.all(results.filter((r) => r.status === 201).map((r) => settled(owner.token, r.body.id)));
  });

  it.each([
    ["cancelled", { status: "cancelled" as const }],
    ["past due", { status: "past_due" as const }],
    ["a trial that has ended", { status: "trialing" as const, period_end: "2020-01-01T00:00:00.000Z" }],
  ])("a workspace whose subscription is %s gets 402 SUBSCRIPTION_REQUIRED on upload and upload-url, reads still work", async (_what, patch) => {
    const { owner, workspace } = await newWorkspace();
    await setAccount(owner.id, patch);
    const res = await upload(owner.token, workspace.id, { name: "a.md", data: Buffer.from("# A\n\nText.\n") }, "text/markdown");
    expectEnvelope(res, 402, "SUBSCRIPTION_REQUIRED");
    const url = await call("POST", "/api/research/upload-url", {
      token: owner.token,
      body: { workspace_id: workspace.id, source_type: "interview", title: "A", file_name: "a.md", content_type: "text/markdown", file_size_bytes: 12 },
    });
    expectEnvelope(url, 402, "SUBSCRIPTION_REQUIRED");
    expect(await sourceItems(workspace.id)).toEqual([]);
    expect(await usageCount(workspace.id)).toBe(0);
    expect(await bucketKeys(`workspaces/${workspace.id}/`)).toEqual([]);
    expect((await list(owner.token, { workspace_id: workspace.id })).status).toBe(200);
  });
});
