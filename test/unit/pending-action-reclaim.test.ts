/**
 * Reclaiming an executing pending action (core/pending-action/executor.ts): the sweeper reads a row whose lease has
 * expired, and before its claim the live executor renews that lease (same owner, new expiry). The reclaim must back
 * off: the tool is not run a second time, nothing is failed, the live executor keeps the row. Against DynamoDB Local;
 * the renewal lands between the read and the claim (test/support/races.ts `landsBefore`).
 */
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { db } from "../../core/db/service";
import { gatedTool, type GatedTool } from "../../core/agent/tools";
import { createPending, type PendingActionItem } from "../../core/pending-action";
import { executeAction, MAX_ATTEMPTS } from "../../core/pending-action/executor";
import { newWorkspace } from "../support/api";
import { landsBefore } from "../support/races";

let userId: string;
let ws: string;
let tool: GatedTool;

beforeAll(async () => {
  const w = await newWorkspace("Pending action reclaim");
  userId = w.owner.id;
  ws = w.workspace.id;
  tool = gatedTool("create_insight")!;
});

/** An approved create_insight left executing by `owner`, its lease expired a second ago, after `attempts` claims. */
async function executingRow(owner: string, attempts = 1): Promise<string> {
  const ctx = { userId, workspaceId: ws, missionId: randomUUID(), sessionId: null, attachmentIds: [] };
  const { id } = await createPending(ctx, tool, { insight_type: "pain_point", title: `Reclaim ${id8()}`, description: "Export is hidden.", severity: "high" });
  const past = Date.now() - 1_000;
  await db()
    .entities.pendingAction.patch({ workspace_id: ws, id })
    .set({ status: "executing", resolved_by: userId, resolved_at: new Date().toISOString(), lease_owner: owner, lease_expires_at: past, sweep: "due", due_at: new Date(past).toISOString(), attempts })
    .go();
  return id;
}
const id8 = () => randomUUID().slice(0, 8);

/** The live executor's renewal (keepLease): same owner, the lease a minute ahead. */
const renew = (id: string, owner: string) =>
  db()
    .entities.pendingAction.patch({ workspace_id: ws, id })
    .set({ lease_expires_at: Date.now() + 60_000 })
    .where((a, op) => `${op.eq(a.status, "executing")} AND ${op.eq(a.lease_owner, owner)}`)
    .go();

const rowOf = async (id: string) => (await db().entities.pendingAction.get({ workspace_id: ws, id }).go({ consistent: true })).data as PendingActionItem;
const insightsOf = async (id: string) =>
  (await db().entities.insight.query.byWorkspace({ workspace_id: ws }).go({ pages: "all", consistent: true })).data.filter((i) => i.pending_action_id === id);

describe("reclaiming an executing row whose lease was renewed after it was read", () => {
  it("backs off: skipped, the tool not run again, the live executor keeps its lease", async () => {
    const id = await executingRow("alive");
    const [outcome] = await landsBefore(/^Update/, id, () => renew(id, "alive"), () => executeAction(ws, id));
    expect(outcome).toMatchObject({ outcome: "skipped", status: "executing" });
    expect(await insightsOf(id)).toEqual([]);
    const row = await rowOf(id);
    expect(row).toMatchObject({ status: "executing", lease_owner: "alive", attempts: 1 });
    expect(row.lease_expires_at!).toBeGreaterThan(Date.now());
  });

  it(`does not end a renewed row failed "outcome unknown" after ${MAX_ATTEMPTS} attempts either`, async () => {
    const id = await executingRow("alive", MAX_ATTEMPTS);
    const [outcome] = await landsBefore(/^Update/, id, () => renew(id, "alive"), () => executeAction(ws, id));
    expect(outcome).toMatchObject({ outcome: "skipped", status: "executing" });
    expect(await rowOf(id)).toMatchObject({ status: "executing", lease_owner: "alive" });
  });

  it("still reclaims a row whose lease stayed expired (a dead executor)", async () => {
    const id = await executingRow("crashed");
    expect(await executeAction(ws, id)).toMatchObject({ outcome: "executed" });
    expect(await insightsOf(id)).toHaveLength(1);
    expect(await rowOf(id)).toMatchObject({ status: "executed", attempts: 2 });
  });

  it("reclaims a row with no lease time at all (the read side takes it as expired), and runs it once", async () => {
    const id = await executingRow("gone");
    await db().entities.pendingAction.patch({ workspace_id: ws, id }).remove(["lease_expires_at"]).go();
    expect(await executeAction(ws, id)).toMatchObject({ outcome: "executed" });
    expect(await insightsOf(id)).toHaveLength(1);
    expect(await rowOf(id)).toMatchObject({ status: "executed" });
  });
});
