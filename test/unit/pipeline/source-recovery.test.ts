/**
 * The research-source recovery sweeper (core/pipeline/recovery.ts; issue #10 item 1): the durable record drives
 * extraction and indexing to a terminal state when the event or the execution that should have done it is gone.
 * Each test loses work on purpose (a runner that drops a start, as a crash or a lost S3 event would), then sweeps
 * with the clock moved past the grace, limited to its own workspace (the table is shared by the test files).
 * The end-to-end case, a kill -9 of the embedded runtime mid-batch, is test/flows/source-crash.test.ts.
 */
import { afterEach, describe, expect, it } from "vitest";
import { setWorkflowRunner, type ExtractionInput } from "../../../core/pipeline";
import { INDEX_CLAIM_MS, INDEX_RECOVERY_BUDGET_MS, sweepSources } from "../../../core/pipeline/recovery";
import * as Research from "../../../core/research";
import { SOURCE_DUE } from "../../../core/research/research-source.entity";
import { drainLocalWorkflows, localWorkflowRunner } from "../../../local/pipeline";
import { call, newWorkspace } from "../../support/api";
import { uploadResearch, waitFor } from "../../support/multipart";
import { storeFails } from "../../support/store-faults";

const GRACE_MS = 121_000; // past Config.sourceSweepGraceSeconds (120 s)

/** The real local runner, except that the starts `drop` says are lost (never run), as after a crash. */
function lossyRunner(drop: (input: ExtractionInput) => boolean) {
  const real = localWorkflowRunner();
  const dropped: ExtractionInput[] = [];
  setWorkflowRunner({
    startExtraction: async (input) => {
      if (drop(input)) dropped.push(input);
      else await real.startExtraction(input);
    },
    isRunning: (ref) => real.isRunning(ref),
  });
  return dropped;
}

async function uploadText(token: string, workspaceId: string, name = "notes.md") {
  const res = await uploadResearch(token, workspaceId, { name, data: Buffer.from(`# ${name}\n\nThe export button is hard to find.\n`) }, "text/markdown");
  expect(res.status, res.text).toBe(201);
  return res.body.id as string;
}

const itemOf = (workspaceId: string, id: string) => Research.getItem(workspaceId, id);

afterEach(async () => {
  await drainLocalWorkflows();
  setWorkflowRunner(localWorkflowRunner());
});

describe("source recovery sweeper", () => {
  it("restarts a pending source whose execution was lost, under a new attempt, and it completes", async () => {
    const dropped = lossyRunner((input) => input.attempt === 0);
    const { owner, workspace } = await newWorkspace();
    const id = await uploadText(owner.token, workspace.id);
    await waitFor(async () => dropped.some((d) => d.source_id === id));
    const before = await itemOf(workspace.id, id);
    expect(before).toMatchObject({ processing_status: "pending", processing_attempt: 0, sweep: SOURCE_DUE });

    // Within the grace nothing is due: a slow execution is not raced.
    expect((await sweepSources({ workspaceId: workspace.id })).due).toBe(0);

    const report = await sweepSources({ workspaceId: workspace.id, now: Date.now() + GRACE_MS });
    expect(report).toMatchObject({ due: 1, restarted: 1, errors: [] });
    const done = await waitFor(async () => {
      const item = await itemOf(workspace.id, id);
      return item?.processing_status === "completed" ? item : null;
    });
    expect(done).toMatchObject({ processing_attempt: 1, recoveries: 1 });
    // MENTION_INDEXING is off in tests: the Index step settles the source, which leaves the sweeper's index.
    await waitFor(async () => (await itemOf(workspace.id, id))?.sweep === undefined);
    expect((await sweepSources({ workspaceId: workspace.id, now: Date.now() + 10 * GRACE_MS })).due).toBe(0);
  });

  it("leaves alone a source whose execution still runs, and looks again after the grace", async () => {
    const held: ExtractionInput[] = [];
    setWorkflowRunner({
      startExtraction: async (input) => void held.push(input),
      isRunning: async (ref) => held.some((h) => h.source_id === ref.source_id && h.attempt === ref.attempt),
    });
    const { owner, workspace } = await newWorkspace();
    const id = await uploadText(owner.token, workspace.id);
    await waitFor(async () => held.length > 0);
    const report = await sweepSources({ workspaceId: workspace.id, now: Date.now() + GRACE_MS });
    expect(report).toMatchObject({ due: 1, running: 1, restarted: 0 });
    const item = await itemOf(workspace.id, id);
    expect(item).toMatchObject({ processing_status: "pending", processing_attempt: 0 });
    expect(Date.parse(item!.due_at!)).toBeGreaterThan(Date.now() + GRACE_MS);
  });

  it("fails a source after Config.sourceMaxRecoveries restarts, with a reason, instead of looping", async () => {
    lossyRunner(() => true);
    const { owner, workspace } = await newWorkspace();
    const id = await uploadText(owner.token, workspace.id);
    let now = Date.now();
    for (let i = 0; i < 3; i++) {
      now += GRACE_MS;
      expect(await sweepSources({ workspaceId: workspace.id, now })).toMatchObject({ restarted: 1 });
    }
    now += GRACE_MS;
    expect(await sweepSources({ workspaceId: workspace.id, now })).toMatchObject({ failed: 1 });
    const item = await itemOf(workspace.id, id);
    expect(item).toMatchObject({ processing_status: "failed", processing_attempt: 3 });
    expect(item!.processing_error).toMatch(/interrupted 4 times/);
    expect(item!.sweep).toBeUndefined();
    // The user can still reprocess it, which makes it due again.
    setWorkflowRunner(localWorkflowRunner());
    const again = await call("POST", `/api/research/sources/${id}/reprocess`, { token: owner.token });
    expect(again.status).toBe(200);
    await waitFor(async () => (await itemOf(workspace.id, id))?.processing_status === "completed");
  });

  it("fails a pending source whose execution timed out, instead of starting the same work again", async () => {
    // In AWS an execution that reaches the state machine's TimeoutSeconds ends TIMED_OUT without running MarkFailed.
    const starts: ExtractionInput[] = [];
    setWorkflowRunner({
      startExtraction: async (input) => void starts.push(input),
      isRunning: async () => false,
      timedOut: async (ref) => starts.some((s) => s.source_id === ref.source_id && s.attempt === ref.attempt),
    });
    const { owner, workspace } = await newWorkspace();
    const id = await uploadText(owner.token, workspace.id);
    await waitFor(async () => starts.some((s) => s.source_id === id));
    const report = await sweepSources({ workspaceId: workspace.id, now: Date.now() + GRACE_MS });
    expect(report).toMatchObject({ due: 1, failed: 1, restarted: 0, errors: [] });
    expect(starts.filter((s) => s.source_id === id).map((s) => s.attempt)).toEqual([0]);
    const item = await itemOf(workspace.id, id);
    expect(item).toMatchObject({
      processing_status: "failed",
      processing_attempt: 0,
      processing_error: "Extraction ran past its time limit and was stopped; try reprocessing, or split the file into smaller parts",
    });
    expect(item!.sweep).toBeUndefined();
  });

  it("two sweepers at once restart a source once", async () => {
    const dropped = lossyRunner(() => true);
    const { owner, workspace } = await newWorkspace();
    const id = await uploadText(owner.token, workspace.id);
    const now = Date.now() + GRACE_MS;
    const [a, b] = await Promise.all([sweepSources({ workspaceId: workspace.id, now }), sweepSources({ workspaceId: workspace.id, now })]);
    expect(a.restarted + b.restarted).toBe(1);
    expect(dropped.filter((d) => d.source_id === id).map((d) => d.attempt)).toEqual([0, 1]);
  });

  it("fails a presigned source whose file never arrived, once its upload URL has expired", async () => {
    const { owner, workspace } = await newWorkspace();
    const res = await call("POST", "/api/research/upload-url", {
      token: owner.token,
      body: { workspace_id: workspace.id, source_type: "survey", title: "Never sent", file_name: "never.csv", content_type: "text/csv", file_size_bytes: 1000 },
    });
    expect(res.status, res.text).toBe(201);
    const id = res.body.source.id as string;
    // Before the URL expires the client may still upload: the source waits.
    expect(await sweepSources({ workspaceId: workspace.id, now: Date.now() + GRACE_MS })).toMatchObject({ due: 1, waiting: 1 });
    expect((await itemOf(workspace.id, id))?.processing_status).toBe("pending");
    const report = await sweepSources({ workspaceId: workspace.id, now: Date.now() + 16 * 60_000 + GRACE_MS });
    expect(report).toMatchObject({ failed: 1 });
    const item = await itemOf(workspace.id, id);
    expect(item).toMatchObject({ processing_status: "failed", processing_error: "The file did not arrive before its upload URL expired; upload it again" });
  });

  it("indexes a completed source whose Index step never ran", async () => {
    const previous = process.env.MENTION_INDEXING;
    // The execution dies after Complete (its Index step never runs): indexing is owed.
    const real = localWorkflowRunner({ handlers: { Index: async (input: unknown) => input } });
    setWorkflowRunner(real);
    const { owner, workspace } = await newWorkspace();
    const id = await uploadText(owner.token, workspace.id);
    await waitFor(async () => (await itemOf(workspace.id, id))?.processing_status === "completed");
    await drainLocalWorkflows();
    expect(await itemOf(workspace.id, id)).toMatchObject({ indexed: false, sweep: SOURCE_DUE });
    process.env.MENTION_INDEXING = "on";
    try {
      const report = await sweepSources({ workspaceId: workspace.id, now: Date.now() + GRACE_MS });
      expect(report).toMatchObject({ due: 1, indexed: 1, errors: [] });
    } finally {
      process.env.MENTION_INDEXING = previous;
    }
    const item = await itemOf(workspace.id, id);
    expect(item).toMatchObject({ indexed: true, index_attempts: 1 });
    expect(item!.sweep).toBeUndefined();
    const source = await call("GET", `/api/research/sources/${id}`, { token: owner.token });
    expect(source.body.indexed).toBe(true);
  });

  /** A completed source whose Index step never ran (its execution died after Complete): indexing is owed. */
  async function owedIndexing() {
    setWorkflowRunner(localWorkflowRunner({ handlers: { Index: async (input: unknown) => input } }));
    const { owner, workspace } = await newWorkspace();
    const id = await uploadText(owner.token, workspace.id);
    await waitFor(async () => (await itemOf(workspace.id, id))?.processing_status === "completed");
    await drainLocalWorkflows();
    return { workspace, id };
  }

  it("starts no indexing it lacks the time to finish: the source is left due, its attempts untouched", async () => {
    const { workspace, id } = await owedIndexing();
    const previous = process.env.MENTION_INDEXING;
    process.env.MENTION_INDEXING = "on";
    try {
      const short = await sweepSources({ workspaceId: workspace.id, now: Date.now() + GRACE_MS, timeLeftMs: () => INDEX_RECOVERY_BUDGET_MS - 1_000 });
      expect(short).toMatchObject({ due: 1, left: 1, indexed: 0, errors: [] });
      expect(await itemOf(workspace.id, id)).toMatchObject({ indexed: false, sweep: SOURCE_DUE });
      expect((await itemOf(workspace.id, id))!.index_attempts ?? 0).toBe(0);
      // With almost no time left, no source is even looked at.
      expect(await sweepSources({ workspaceId: workspace.id, now: Date.now() + GRACE_MS, timeLeftMs: () => 1_000 })).toMatchObject({ due: 1, left: 1 });
      // With the time, the next sweep indexes it.
      const full = await sweepSources({ workspaceId: workspace.id, now: Date.now() + GRACE_MS, timeLeftMs: () => 280_000 });
      expect(full).toMatchObject({ due: 1, indexed: 1, left: 0, errors: [] });
    } finally {
      process.env.MENTION_INDEXING = previous;
    }
    expect(await itemOf(workspace.id, id)).toMatchObject({ indexed: true, index_attempts: 1 });
  });

  it("a sweeper's indexing claim outlasts its run, so a later sweep does not embed the same source meanwhile", async () => {
    const { workspace, id } = await owedIndexing();
    const previous = process.env.MENTION_INDEXING;
    process.env.MENTION_INDEXING = "on";
    // The first sweeper's indexing does not finish (its last write fails, as a sweeper killed there would leave it).
    const fault = storeFails(/^UpdateItem/, '"#indexed"', 1);
    const now = Date.now() + GRACE_MS;
    try {
      const first = await sweepSources({ workspaceId: workspace.id, now });
      expect(first.errors).toHaveLength(1);
      expect(fault.failed()).toBe(1);
      const claimed = await itemOf(workspace.id, id);
      expect(claimed).toMatchObject({ indexed: false, index_attempts: 1, sweep: SOURCE_DUE });
      expect(Date.parse(claimed!.due_at!) - now).toBe(INDEX_CLAIM_MS);
      // Past the grace but within the claim (a sweeper Lambda may still be embedding it): not due.
      expect(await sweepSources({ workspaceId: workspace.id, now: now + GRACE_MS + 60_000 })).toMatchObject({ due: 0 });
      // Past the claim: due again, and indexed.
      expect(await sweepSources({ workspaceId: workspace.id, now: now + INDEX_CLAIM_MS + 1_000 })).toMatchObject({ due: 1, indexed: 1, errors: [] });
    } finally {
      fault.remove();
      process.env.MENTION_INDEXING = previous;
    }
    expect(await itemOf(workspace.id, id)).toMatchObject({ indexed: true, index_attempts: 2 });
  });
});
