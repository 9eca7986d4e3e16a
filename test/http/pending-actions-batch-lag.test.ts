/**
 * `POST /api/pending-actions/batch/{batch_id}/approve` while the batch index (gsi2) lags the table (core/pending-action
 * batchApprove): a row written a moment ago may be missing from the index, or the whole batch may be. Through the
 * real handler against DynamoDB Local; the lag is a middleware on the shared client hiding rows from gsi2 Queries, as
 * test/support/index-lag.ts does for gsi1 (that helper answers gsi1 only).
 */
import { randomUUID } from "node:crypto";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { dynamoClient } from "../../core/db/client";
import { gatedTool, type GatedTool } from "../../core/agent/tools";
import { createPending } from "../../core/pending-action";
import { call, newWorkspace } from "../support/api";
import { expectEnvelope } from "./_helpers";

let token: string;
let userId: string;
let wsA: string;
let wsB: string;
let tool: GatedTool;

beforeAll(async () => {
  const a = await newWorkspace("Batch index lag");
  token = a.owner.token;
  userId = a.owner.id;
  wsA = a.workspace.id;
  const b = await call("POST", "/api/workspaces", { token, body: { name: "Batch index lag, second" } });
  expect(b.status, b.text).toBe(201);
  wsB = b.body.id;
  tool = gatedTool("create_insight")!;
});

const undo: (() => void)[] = [];
afterEach(() => {
  while (undo.length) undo.pop()!();
});

/** A pending create_insight of mission `missionId` (batch `${missionId}:create_insight`). */
async function pend(missionId: string, workspaceId = wsA): Promise<string> {
  const ctx = { userId, workspaceId, missionId, sessionId: null, attachmentIds: [] };
  return (await createPending(ctx, tool, { insight_type: "pain_point", title: `Lagging ${randomUUID().slice(0, 6)}`, description: "Export is hidden.", severity: "high" })).id;
}

/**
 * The batch index lagging: gsi2 Queries naming `batchId` answer without the rows whose item mentions one of `ids`
 * (every row when `ids` is "all"), the first `times` of them. @returns how many Queries were answered so.
 */
function batchIndexLags(batchId: string, ids: string[] | "all", times = Number.POSITIVE_INFINITY): { lagged: () => number } {
  const name = `batchIndexLags-${Math.random().toString(36).slice(2)}`;
  let lagged = 0;
  dynamoClient().middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { IndexName?: string };
      if (lagged >= times || !/Query/.test(String(context.commandName)) || input.IndexName !== "gsi2" || !JSON.stringify(input).includes(batchId)) return next(args);
      lagged++;
      if (ids === "all") return { output: { Items: [], Count: 0, ScannedCount: 0, $metadata: {} }, response: {} } as never;
      const out = (await next(args)) as { output: { Items?: unknown[] } & Record<string, unknown> };
      const items = (out.output.Items ?? []).filter((item) => !ids.some((id) => JSON.stringify(item).includes(id)));
      return { ...out, output: { ...out.output, Items: items, Count: items.length } } as never;
    },
    { step: "initialize", name },
  );
  undo.push(() => dynamoClient().middlewareStack.remove(name));
  return { lagged: () => lagged };
}

const batch = (batchId: string, items: unknown[]) => call("POST", `/api/pending-actions/batch/${batchId}/approve`, { token, body: { items } });
const statusOf = async (id: string) => (await call("GET", `/api/pending-actions/${id}`, { token })).body.status as string;

describe("batch approve while the batch index lags", () => {
  it("accepts a listed row of the batch the index does not show yet (read from its workspace)", async () => {
    const missionId = randomUUID();
    const batchId = `${missionId}:create_insight`;
    const indexed = await pend(missionId);
    const fresh = await pend(missionId);
    const lag = batchIndexLags(batchId, [fresh]);
    const res = await batch(batchId, [{ pendingActionId: indexed }, { pendingActionId: fresh, exclude: true }]);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ batchId, approved: 1, rejected: 1, skipped: 0 });
    expect(lag.lagged()).toBeGreaterThan(0);
    expect(await statusOf(fresh)).toBe("rejected");
  });

  it("asks the index again when it shows none of the batch yet, instead of 404", async () => {
    const missionId = randomUUID();
    const batchId = `${missionId}:create_insight`;
    const id = await pend(missionId);
    const lag = batchIndexLags(batchId, "all", 1);
    const res = await batch(batchId, [{ pendingActionId: id, exclude: true }]);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ batchId, approved: 0, rejected: 1, skipped: 0 });
    expect(lag.lagged()).toBe(1);
  });

  it("still refuses a listed row of another batch, or of another workspace, as not in the batch (422, nothing written)", async () => {
    const missionId = randomUUID();
    const batchId = `${missionId}:create_insight`;
    const id = await pend(missionId);
    const otherBatch = await pend(randomUUID());
    const otherWorkspace = await pend(missionId, wsB);
    batchIndexLags(batchId, [otherWorkspace]); // keeps the batch to one workspace, as the index might show it
    const res = await batch(batchId, [{ pendingActionId: id }, { pendingActionId: otherBatch }, { pendingActionId: otherWorkspace }]);
    expectEnvelope(res, 422, "VALIDATION_ERROR");
    expect(res.body.errors.map((e: { loc: unknown[]; type: string }) => [e.loc[2], e.type])).toEqual([
      [1, "not_in_batch"],
      [2, "not_in_batch"],
    ]);
    for (const pid of [id, otherBatch, otherWorkspace]) expect(await statusOf(pid)).toBe("pending");
  });

  it("404 once the index keeps showing nothing", async () => {
    const missionId = randomUUID();
    const id = await pend(missionId);
    batchIndexLags(`${missionId}:create_insight`, "all");
    expectEnvelope(await batch(`${missionId}:create_insight`, [{ pendingActionId: id }]), 404, "NOT_FOUND");
    expect(await statusOf(id)).toBe("pending");
  });
});
