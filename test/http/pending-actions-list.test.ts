/**
 * `GET /api/pending-actions` counts and orders a workspace's rows on their slim index (gsi4, core/pending-action/
 * listing.ts) and reads whole only the page's rows: a row keeps up to 64 KiB each of tool input, preview, user edits
 * and result, and the rows are the workspace's audit trail, so reading every row whole on each page grew with the
 * workspace's history. Rows written before the index are given its keys at their workspace's first listing
 * (core/db/slim-index.ts), which answers from the partition.
 */
import { randomUUID } from "node:crypto";
import { DeleteCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { beforeAll, describe, expect, it } from "vitest";
import { dynamoClient } from "../../core/db/client";
import { db } from "../../core/db/service";
import { Config } from "../../core/config";
import { PENDING_ACTION_LIST_INDEX } from "../../core/pending-action/pending-action.entity";
import { call, newWorkspace } from "../support/api";
import { readsDuring } from "../support/read-units";

type Ws = Awaited<ReturnType<typeof newWorkspace>>;
/** About 50 KB of tool input and preview per row. */
const BULK = "x".repeat(25_000);
const STATUSES = ["pending", "approved", "executing", "executed", "rejected", "failed"] as const;
const base = Date.parse("2026-03-01T00:00:00.000Z");

/** `n` rows of ~50 KB, a second apart, statuses in turn; their ids oldest first. */
async function rows(ws: Ws, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const id = randomUUID();
    ids.push(id);
    await db()
      .entities.pendingAction.create({
        id, workspace_id: ws.workspace.id, batch_id: `m-${i}:update_insight`, tool_name: "update_insight",
        tool_input: { note: BULK }, preview: { summary: `Row ${i}`, body: BULK }, status: STATUSES[i % STATUSES.length]!,
        created_by: ws.owner.id, created_at: new Date(base + i * 1000).toISOString(),
      })
      .go();
  }
  return ids;
}

/** The DynamoDB reads of one list request on this workspace, with the read units each consumed. */
async function measured(ws: Ws, query: Record<string, string | number>) {
  const { result: res, reads } = await readsDuring(ws.workspace.id, () => call("GET", "/api/pending-actions", { token: ws.owner.token, query: { workspace_id: ws.workspace.id, ...query } }));
  expect(res.status, res.text).toBe(200);
  return { body: res.body as { items: { id: string; status: string }[]; total: number }, reads };
}

describe("GET /api/pending-actions on the slim index", () => {
  let ws: Ws;
  let ids: string[];
  beforeAll(async () => {
    ws = await newWorkspace("Pending actions list");
    ids = await rows(ws, 24);
  }, 120_000);

  it("counts and orders every row from a few read units, and reads whole only the page's rows", async () => {
    const { body, reads } = await measured(ws, { limit: 2, offset: 3 });
    expect(body.total).toBe(24);
    const newest = [...ids].reverse();
    expect(body.items.map((i) => i.id)).toEqual(newest.slice(3, 5));
    const queries = reads.filter((r) => r.command.startsWith("Query"));
    expect(queries.length).toBeGreaterThan(0);
    for (const q of queries) expect(q.index).toBe("gsi4");
    // The partition holds ~1.2 MB of rows: reading them to count is hundreds of units; the index, a couple.
    expect(queries.reduce((n, r) => n + r.units, 0)).toBeLessThan(5);
    const batches = reads.filter((r) => r.command.startsWith("BatchGet"));
    expect(batches.reduce((n, r) => n + r.keys, 0)).toBe(2);
  });

  it("filters by status on the index (approved includes rows being executed), with offsets and totals", async () => {
    const approved = await measured(ws, { status: "approved", limit: 100 });
    const expected = ids.filter((_, i) => ["approved", "executing"].includes(STATUSES[i % STATUSES.length]!)).reverse();
    expect(approved.body.total).toBe(expected.length);
    expect(approved.body.items.map((i) => i.id)).toEqual(expected);
    for (const q of approved.reads.filter((r) => r.command.startsWith("Query"))) expect(q.index).toBe("gsi4");
    const second = await measured(ws, { status: "pending", limit: 2, offset: 2 });
    const pending = ids.filter((_, i) => STATUSES[i % STATUSES.length] === "pending").reverse();
    expect(second.body).toMatchObject({ total: pending.length });
    expect(second.body.items.map((i) => i.id)).toEqual(pending.slice(2, 4));
  });

  it("leaves out of a filtered page a row whose status moved off the filter since the index was read", async () => {
    const other = await newWorkspace("Pending actions moving");
    const [id] = await rows(other, 1); // pending
    const name = `paMoves-${Math.random()}`;
    // Between the index's read and the page's read by key, the row is rejected by another session.
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        if (String(context.commandName).startsWith("BatchGet") && JSON.stringify(args.input).includes(id!)) {
          await db().entities.pendingAction.patch({ workspace_id: other.workspace.id, id: id! }).set({ status: "rejected" }).go();
        }
        return next(args);
      },
      { step: "initialize", name },
    );
    try {
      const res = await call("GET", "/api/pending-actions", { token: other.owner.token, query: { workspace_id: other.workspace.id, status: "pending" } });
      expect(res.status, res.text).toBe(200);
      expect(res.body.items).toEqual([]);
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
  });
});

describe("rows written before the index", () => {
  it("are given its keys at the workspace's first listing, which answers from the partition; later listings read the index", async () => {
    const older = await newWorkspace("Older pending actions");
    const ids = await rows(older, 5);
    // As the older code left them: no gsi4 keys, and no mark on the workspace.
    const table = Config.tableName();
    for (const id of ids) {
      await dynamoClient().send(new UpdateCommand({ TableName: table, Key: { pk: `ws#${older.workspace.id}`, sk: `pa#${id}` }, UpdateExpression: "REMOVE gsi4pk, gsi4sk" }));
    }
    await dynamoClient().send(new DeleteCommand({ TableName: table, Key: { pk: `ws#${older.workspace.id}`, sk: PENDING_ACTION_LIST_INDEX.markSk } }));

    const first = await measured(older, { limit: 10 });
    expect(first.body.total).toBe(5);
    expect(first.body.items.map((i) => i.id)).toEqual([...ids].reverse());
    expect(first.reads.some((r) => r.command.startsWith("Query") && r.index === undefined), "the backfill reads the partition").toBe(true);

    const next = await measured(older, { status: "pending", limit: 10 });
    expect(next.body.items.map((i) => i.id)).toEqual([ids[0]!]);
    for (const q of next.reads.filter((r) => r.command.startsWith("Query"))) expect(q.index).toBe("gsi4");
  });
});
