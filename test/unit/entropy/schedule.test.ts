/**
 * The scheduled entropy scanner on the embedded runtime (found by review): the runtime's schedules
 * (local/tasks-schedules.ts) had the task sweeper and the 02:00 cycles but not the scanner, so no workspace was ever
 * scanned on schedule locally. It now fires at the AWS schedule's time (stacks/Tasks.ts, 04:00 UTC) through the same
 * handler. The file runs on its own table: the runtime's sweeper looks at every task of its table.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it, vi } from "vitest";
import { ensureTable } from "../../../local/dynamodb";
import { startTaskSchedules } from "../../../local/tasks-schedules";
import { ENTROPY_SCAN_SCHEDULE_EXPRESSION } from "../../../stacks/Tasks";
import { ENTROPY_SCAN_CRON, ENTROPY_SCAN_SCHEDULE, recentScans } from "../../../core/entropy";
import { newWorkspace } from "../../support/api";
import { waitFor } from "../../support/multipart";

const saved = process.env.TABLE_NAME;
beforeAll(async () => {
  const name = `r2d-entropy-schedule-${randomUUID().slice(0, 8)}`;
  await ensureTable(inject("dynamoEndpoint"), name);
  process.env.TABLE_NAME = name;
});
afterAll(() => {
  vi.useRealTimers();
  process.env.TABLE_NAME = saved;
});

/** An EventBridge `cron(min hour day-of-month month day-of-week year)` as croner's 5 fields (`?` is `*` there). */
const fiveFields = (expression: string) => /^cron\((.*)\)$/.exec(expression)![1]!.split(" ").slice(0, 5).map((f) => (f === "?" ? "*" : f)).join(" ");

/** The first 04:00 UTC at least a minute from now. */
function next0400(): number {
  const soon = Date.now() + 60_000;
  const d = new Date(soon);
  const at = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), 4);
  return at >= soon ? at : at + 86_400_000;
}

describe("the embedded runtime's schedules", () => {
  it("fire the entropy scanner daily at the AWS schedule's time (04:00 UTC), through its handler", async () => {
    expect(ENTROPY_SCAN_SCHEDULE_EXPRESSION).toBe(ENTROPY_SCAN_SCHEDULE);
    expect(fiveFields(ENTROPY_SCAN_SCHEDULE)).toBe(ENTROPY_SCAN_CRON);
    const ws = (await newWorkspace("Scanned on schedule")).workspace.id;
    expect(await recentScans(ws)).toEqual([]);

    // The runtime starts two seconds before 04:00 UTC (only the clock is moved; timers are real).
    const fireAt = next0400();
    vi.useFakeTimers({ toFake: ["Date"], now: fireAt - 2_000, shouldAdvanceTime: true });
    const errors: unknown[] = [];
    const schedules = await startTaskSchedules({ onError: (err) => errors.push(err) });
    try {
      expect(schedules.entropy.nextRun()).toEqual(new Date(fireAt));
      expect(schedules.cycles.nextRun()!.toISOString()).toMatch(/T02:00:00\.000Z$/);
      // At 04:00 the scanner's handler scans the workspace (never scanned: due), as the scheduled scanner.
      const [scan] = await waitFor(async () => {
        const scans = await recentScans(ws);
        return scans.length ? scans : null;
      }, 60_000, 100);
      expect(scan).toMatchObject({ workspace_id: ws, trigger: "scheduled" });
      expect(Date.parse(scan!.scanned_at)).toBeGreaterThanOrEqual(fireAt);
      // Next: the same time the day after.
      await waitFor(async () => schedules.entropy.nextRun()!.getTime() === fireAt + 86_400_000, 10_000, 50);
    } finally {
      await schedules.stop();
      vi.useRealTimers();
    }
    expect(errors).toEqual([]);
    expect(schedules.entropy.nextRun()).toBeNull();
  }, 120_000);
});
