/**
 * The synthesis swarm (issue #21; spec 02 `harness_swarm_activated` / `harness_swarm_complete`,
 * `harness_iteration_complete`) over the wire, on the local engine: a synthesis of four small real research files (the
 * VA app's two interview notes and app-store reviews, the Jupyter notebook survey's README) on the Power plan (`has_synthesis_swarm`) reports through four specialist threads in parallel, in three passes; the
 * run is judged like any other; the plan in effect decides (a downgrade within a period paid at Power keeps it). (A synthesis on the trial plan, or of fewer sources, reports as one run:
 * test/http/stream-variants.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runsOf } from "../../core/agent";
import { db } from "../../core/db/service";
import { SPECIALISTS } from "../../core/harness/swarm";
import { call, newWorkspace } from "../support/api";
import { realFile, uploadResearch, waitFor } from "../support/multipart";
import { setAccount, topUp } from "../support/billing";
import { liveGateway, orderProblems, readStream, type WireEvent } from "../support/sse";

// Mentions are embedded at ingestion, so the synthesis reuses the stored vectors.
process.env.MENTION_INDEXING = "on";

let gw: Awaited<ReturnType<typeof liveGateway>>;
let token: string;
let ws: string;
const sourceIds: string[] = [];

const of = (events: WireEvent[], name: string) => events.filter((e) => e.event === name).map((e) => e.data);

beforeAll(async () => {
  gw = await liveGateway();
  const w = await newWorkspace("Swarm");
  token = w.owner.token;
  ws = w.workspace.id;
  await setAccount(w.owner.id, { plan: "power", status: "active", period_end: new Date(Date.now() + 30 * 86_400_000).toISOString() });
  await topUp(w.owner.id, 100);
  for (const [file, type, kind] of [
    ["va-mobile-app/interview-notes/2023-07-retention-study-participant-10.md", "text/markdown", "interview"],
    ["va-mobile-app/interview-notes/2023-07-retention-study-participant-11.md", "text/markdown", "interview"],
    ["va-mobile-app/app-store-reviews-2024-05-partial.csv", "text/csv", "feedback"],
    ["jupyter/surveys/2015-notebook-ux-survey-README.md", "text/markdown", "survey"],
  ] as const) {
    const up = await uploadResearch(token, ws, await realFile(file), type, kind);
    expect(up.status, up.text).toBe(201);
    sourceIds.push(up.body.id);
  }
  await waitFor(
    async () => (await call("GET", "/api/research/sources", { token, query: { workspace_id: ws } })).body.sources.every((s: { processing_status: string; indexed: boolean }) => s.processing_status === "completed" && s.indexed),
    180_000,
  );
}, 240_000);
afterAll(async () => gw.close());

describe("a synthesis over many sources on the Power plan", () => {
  it("reports through four specialist threads in parallel, in three passes, and is judged", async () => {
    const events = await readStream(gw.base, "/api/stream/synthesis", token, { workspace_id: ws, prompt: "What does our research say?", source_ids: sourceIds }, { timeoutMs: 240_000 });

    expect(orderProblems(events)).toEqual([]);
    const names = events.map((e) => e.event);
    const [activated] = of(events, "harness_swarm_activated");
    expect(activated).toMatchObject({ source_count: 4, mission_id: events.at(-1)!.data.mission_id });
    expect(activated.specialists.map((s: { agent_name: string }) => s.agent_name)).toEqual(SPECIALISTS.map((s) => s.agent_name));
    // The synthesis first, then the swarm: its pass 1 closes when the swarm starts.
    expect(names.indexOf("creation")).toBeLessThan(names.indexOf("harness_swarm_activated"));
    expect(of(events, "harness_iteration_complete").map((i) => [i.iteration, i.phase])).toEqual([[1, "extraction"], [2, "specialists"], [3, "verification"]]);
    expect(names.indexOf("harness_iteration_complete")).toBeLessThan(names.indexOf("harness_swarm_activated"));
    expect(names.lastIndexOf("harness_iteration_complete")).toBeGreaterThan(names.indexOf("validation_sync"));
    // Four threads, all started before the first finished, each with its specialist's name.
    const starts = of(events, "agent_thread_start");
    expect(starts.map((s) => s.agent_name).sort()).toEqual(SPECIALISTS.map((s) => s.agent_name).sort());
    expect(names.lastIndexOf("agent_thread_start")).toBeLessThan(names.indexOf("agent_thread_done"));
    expect(of(events, "harness_swarm_complete")).toEqual([expect.objectContaining({ specialists: 4, status: "success" })]);
    // The report is the specialists' answers side by side; every tool they ran was a read.
    const report = events.filter((e) => e.event === "token").map((e) => e.data.content).join("");
    for (const s of SPECIALISTS) expect(report).toContain(`. ${s.objective}`);
    expect(of(events, "tool_result").every((r) => r.status === "success")).toBe(true);
    const [contract] = of(events, "harness_contract");
    expect(contract.workflow_type).toBe("synthesis");
    const run = (await runsOf(ws)).find((r) => r.tool_name === "agent_loop")!;
    expect(run.quality).toMatchObject({ workflow_type: "synthesis", mission_id: activated.mission_id });
    expect(typeof run.rqs).toBe("number");
  }, 300_000);

  it("follows the plan in effect: downgraded to Growth within a period paid at Power, the account keeps the swarm until the period ends", async () => {
    const owner = (await call("GET", "/api/auth/me", { token })).body.id as string;
    // A downgrade within the period: the stored plan is Growth, the period was paid at Power (spec 02 downgrades).
    await db().entities.billingAccount.patch({ user_id: owner }).set({ plan: "growth", period_plan: "power" }).go();
    try {
      const events = await readStream(gw.base, "/api/stream/synthesis", token, { workspace_id: ws, prompt: "What does our research say now?", source_ids: sourceIds }, { timeoutMs: 240_000 });
      expect(orderProblems(events)).toEqual([]);
      expect(of(events, "error")).toEqual([]);
      expect(of(events, "harness_swarm_activated")).toHaveLength(1);
      expect(of(events, "agent_thread_start")).toHaveLength(SPECIALISTS.length);
    } finally {
      await db().entities.billingAccount.patch({ user_id: owner }).set({ plan: "power" }).go();
    }
  });
});
