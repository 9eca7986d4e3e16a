/**
 * The recovery sweeper's lease on a source whose execution still runs (core/pipeline/recovery.ts `runningLease`,
 * issue #24 point 4): it is looked at again after as long as its work has run so far, at least the grace and at most
 * MAX_RUNNING_LEASE_MS, so a long backlog costs a few looks per source instead of one per grace.
 */
import { afterEach, describe, expect, it } from "vitest";
import { setWorkflowRunner, type ExtractionInput } from "../../../core/pipeline";
import { MAX_RUNNING_LEASE_MS, sweepSources } from "../../../core/pipeline/recovery";
import * as Research from "../../../core/research";
import { drainLocalWorkflows, localWorkflowRunner } from "../../../local/pipeline";
import { newWorkspace } from "../../support/api";
import { uploadResearch, waitFor } from "../../support/multipart";

const GRACE_MS = 120_000; // Config.sourceSweepGraceSeconds (120 s)

afterEach(async () => {
  await drainLocalWorkflows();
  setWorkflowRunner(localWorkflowRunner());
});

describe("source recovery sweeper: running lease", () => {
  it("leaves a running source alone for as long as it has run, between the grace and the cap", async () => {
    const held: ExtractionInput[] = [];
    setWorkflowRunner({
      startExtraction: async (input) => void held.push(input),
      isRunning: async (ref) => held.some((h) => h.source_id === ref.source_id && h.attempt === ref.attempt),
    });
    const { owner, workspace } = await newWorkspace();
    const res = await uploadResearch(owner.token, workspace.id, { name: "notes.md", data: Buffer.from("# Notes\n\nThe export button is hard to find.\n") }, "text/markdown");
    expect(res.status, res.text).toBe(201);
    const id = res.body.id as string;
    await waitFor(async () => held.length > 0);
    const created = Date.parse((await Research.getItem(workspace.id, id))!.created_at);
    const leaseAfter = async (now: number) => {
      expect(await sweepSources({ workspaceId: workspace.id, now })).toMatchObject({ due: 1, running: 1, errors: [] });
      return Date.parse((await Research.getItem(workspace.id, id))!.due_at!) - now;
    };

    // Just past the grace: looked at again after the grace.
    expect(await leaseAfter(created + GRACE_MS + 1_000)).toBe(GRACE_MS + 1_000);
    // Five minutes in: after five more minutes (the lease doubles with the work's age).
    expect(await leaseAfter(created + 300_000)).toBe(300_000);
    // An hour in: the cap, so an execution that ends without settling its source is noticed within it.
    expect(await leaseAfter(created + 3_600_000)).toBe(MAX_RUNNING_LEASE_MS);
  });
});
