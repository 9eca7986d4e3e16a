/**
 * The scheduled entropy scanner out of time (found by review): it visited the due workspaces in their owners' order, so
 * when its time ran out the same tail was deferred every day and never scanned (with a 20 h interval and a daily run,
 * the head is due again each day). It now visits the longest unscanned first: never scanned, then the oldest scan.
 * Through the scheduled handler (functions/events/entropy-scanner.ts) with a Lambda context whose time lasts for two
 * scans. The file runs on its own table, so the scanner sees only this file's workspaces.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ensureTable } from "../../../local/dynamodb";
import { dynamoClient } from "../../../core/db/client";
import { recentScans } from "../../../core/entropy";
import { handler } from "../../../functions/events/entropy-scanner";
import { newWorkspace } from "../../support/api";

const saved = { table: process.env.TABLE_NAME, interval: process.env.ENTROPY_SCAN_INTERVAL_HOURS };
beforeAll(async () => {
  const name = `r2d-entropy-due-${randomUUID().slice(0, 8)}`;
  await ensureTable(inject("dynamoEndpoint"), name);
  process.env.TABLE_NAME = name;
});
afterAll(() => {
  process.env.TABLE_NAME = saved.table;
  if (saved.interval === undefined) delete process.env.ENTROPY_SCAN_INTERVAL_HOURS;
  else process.env.ENTROPY_SCAN_INTERVAL_HOURS = saved.interval;
});

/** The handler's margin to finish the scan it starts (functions/events/entropy-scanner.ts). */
const FINISH_MARGIN_MS = 120_000;
/** What one scan takes of the Lambda's time, here. */
const PER_SCAN_MS = 60_000;

/**
 * Run the scheduled handler as a Lambda whose time lasts for `fits` scans: its remaining time drops by PER_SCAN_MS
 * with each scan stored (the scan items' writes, counted on the DynamoDB client).
 * @returns the handler's counts and the workspaces it scanned, in order
 */
async function runWithTimeFor(fits: number) {
  const scanned: string[] = [];
  const name = `countScans-${Math.random()}`;
  dynamoClient().middlewareStack.add(
    (next, context) => async (args) => {
      const out = await next(args);
      const item = (args.input as { Item?: { pk?: string; sk?: string } }).Item;
      if (/^Put/.test(context.commandName ?? "") && item?.sk?.startsWith("entropyscan#")) scanned.push(item.pk!.slice("ws#".length));
      return out;
    },
    { step: "initialize", name },
  );
  try {
    const context = { getRemainingTimeInMillis: () => FINISH_MARGIN_MS + (fits - 0.5) * PER_SCAN_MS - scanned.length * PER_SCAN_MS };
    return { counts: await handler({}, context), scanned };
  } finally {
    dynamoClient().middlewareStack.remove(name);
  }
}

describe("the scheduled entropy scanner with time for only some of the due workspaces", () => {
  it("defers the rest to the next run, which scans them first: two runs together scan every workspace", async () => {
    const ids: string[] = [];
    for (const name of ["North", "East", "South", "West"]) ids.push((await newWorkspace(name)).workspace.id);
    // Every run finds every workspace due again (as a daily run does with the 20 h interval).
    process.env.ENTROPY_SCAN_INTERVAL_HOURS = "0.000001";

    const first = await runWithTimeFor(2);
    expect(first.counts).toMatchObject({ workspaces: 4, scanned: 2, deferred: 2, skipped: 0, failed: 0 });
    expect(first.scanned).toHaveLength(2);

    const second = await runWithTimeFor(2);
    expect(second.counts).toMatchObject({ workspaces: 4, scanned: 2, deferred: 2, skipped: 0, failed: 0 });
    // The two the first run deferred (never scanned) come first.
    expect(second.scanned.sort()).toEqual(ids.filter((id) => !first.scanned.includes(id)).sort());
    for (const id of ids) expect((await recentScans(id)).map((s) => s.trigger)).toEqual(["scheduled"]);

    // Then the oldest scan first: the first run's two, in the order it scanned them.
    const third = await runWithTimeFor(2);
    expect(third.scanned).toEqual(first.scanned);
  }, 120_000);
});
