/**
 * Charging benchmark (issue #12: "added latency of the reserve and settle steps per AI request through the local
 * gateway"): what billing adds to a real AI request.
 *
 *   npm run bench -- charging      (or: npx tsx bench/run.ts charging)
 *   BENCH_CHARGING_N=300 npm run bench -- charging      (quicker, with a noisier p99)
 *
 * The embedded runtime in this process (bench/lib/runtime.ts): DynamoDB Local in memory, the object store, the local
 * gateway on loopback. One owner on a paid plan (no trial milestones to look up) with a boost pack, a document whose
 * blocks come from `POST /api/blocks/extract`, then `POST /api/blocks/{id}/expand` (an AI block action on the local
 * engine: reserve → the action → settle) sent N times one after another through the gateway, after warm-ups. Each
 * run publishes on the `r2d:charge` diagnostics channel what charging added to its request, measured inside the
 * handler (core/agent/index.ts `recordRun`): the reservation before the work (finding the payer, the reserve), and
 * how long the settlement kept the request waiting after the run's record was written (the two are written side by
 * side). Reported: p50/p90/p99 of their sum against the target (< 15 ms together), each part, and the whole
 * request's latency for scale. Then the same on a
 * trial account whose quota is spent and whose runs are charged from a boost pack (the read path: reads before each
 * transaction), which also looks up the trial milestones after each run.
 */
import type { ChargeTiming } from "../core/agent";
import { Recorder, fmtMs, printTable, type Summary } from "./lib/stats";
import { busyWarning, machineLine } from "./lib/machine";
import { startBenchRuntime, type BenchRuntime } from "./lib/runtime";
import { sized, sizeNote } from "./lib/size";

const WARMUP = sized(20, 2);
/**
 * Requests measured per account (env `BENCH_CHARGING_N`, default 1,000, at least 100): a p99 of 300 is the 3rd-worst
 * value and moved between 13.9 and 17.8 ms over five runs on the same quiet machine; of 1,000, the 10th-worst:
 * 11.7–14.8 ms. At the smoke size: 5.
 */
const N = sized(Math.max(100, Number(process.env.BENCH_CHARGING_N ?? 1000) || 1000), 5);
const LOOP_DEADLINE_MS = 120_000;
const TARGET_MS = 15;

const PRD = [
  "# Fix the sign-in loop",
  "## Problem",
  "Users are sent back to the sign-in screen after every app update and cannot reach their prescriptions.",
  "## Solution",
  "Keep the session across updates and refresh tokens silently; show a clear message when sign-in is really needed.",
  "## Risks",
  "Longer sessions on shared devices.",
].join("\n\n");

async function api(rt: BenchRuntime, token: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(new URL(path, rt.base), {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/** A workspace with a PRD's blocks, owned by a fresh user; returns the block to expand. */
async function seeded(rt: BenchRuntime, email: string): Promise<{ token: string; userId: string; workspaceId: string; blockId: string }> {
  const token = await rt.idp.sign({ email, name: "Bench" });
  const me = await api(rt, token, "GET", "/api/auth/me");
  const ws = await api(rt, token, "POST", "/api/workspaces", { name: "Charging bench" });
  const doc = await api(rt, token, "POST", "/api/documents", { workspace_id: ws.id, title: "Sign-in loop", document_type: "prd", content: PRD });
  const blocks = await api(rt, token, "POST", "/api/blocks/extract", { workspace_id: ws.id, document_id: doc.id });
  return { token, userId: me.id, workspaceId: ws.id, blockId: blocks.blocks[0].id };
}

async function measure(rt: BenchRuntime, who: Awaited<ReturnType<typeof seeded>>, label: string): Promise<{ charge: Summary; request: Summary }> {
  const { chargeTimings } = await import("../core/agent");
  const request = new Recorder();
  const reserve = new Recorder();
  const settleWait = new Recorder();
  const added = new Recorder();
  let measuring = false;
  // The handler runs in this process: its runs publish what charging added to each request (core/agent recordRun).
  const onTiming = (m: unknown) => {
    if (!measuring) return;
    const t = m as ChargeTiming;
    reserve.record(t.reserveMs);
    settleWait.record(t.settleWaitMs);
    added.record(t.reserveMs + t.settleWaitMs);
  };
  chargeTimings.subscribe(onTiming);
  const expand = () => api(rt, who.token, "POST", `/api/blocks/${who.blockId}/expand`);
  try {
    for (let i = 0; i < WARMUP; i++) await expand();
    measuring = true;
    const deadline = performance.now() + LOOP_DEADLINE_MS;
    for (let i = 0; i < N && performance.now() < deadline; i++) {
      const t0 = performance.now();
      await expand();
      request.record(performance.now() - t0);
    }
  } finally {
    chargeTimings.unsubscribe(onTiming);
  }
  const c = added.summary();
  const q = request.summary();
  const row = (name: string, s: Summary) => [name, s.n, fmtMs(s.p50), fmtMs(s.p90), fmtMs(s.p99), fmtMs(s.max)];
  console.log(`\n${label}: ${q.n} AI requests (POST /api/blocks/{id}/expand) through the gateway, one at a time, after ${WARMUP} warm-ups`);
  printTable(["measure", "n", "p50 ms", "p90 ms", "p99 ms", "max ms"], [
    row("reserve (before the work)", reserve.summary()),
    row("settle, wait beyond the run's write", settleWait.summary()),
    row("added by charging (reserve + wait)", c),
    row("whole request (client)", q),
  ]);
  return { charge: c, request: q };
}

export default async function charging(): Promise<void> {
  console.log(`charging benchmark — ${machineLine()}`);
  const warn = busyWarning();
  if (warn) console.log(warn);
  if (sizeNote()) console.log(sizeNote());
  const rt = await startBenchRuntime({ tableName: "r2d-bench-charging", bucketName: "r2d-bench-charging" });
  try {
    const { grant } = await import("../core/billing/ledger");
    const { db } = await import("../core/db/service");
    const paid = await seeded(rt, "bench-charging-paid@example.com");
    // A paid period starting now, as the paid invoice grants it: enough monthly quota for every run (0.5 each).
    await grant(paid.userId, { source: "in_bench", credits: N + 100, bucket: "monthly", plan: "growth", period: { start: new Date(), end: new Date(Date.now() + 30 * 86_400_000) } });
    const onPaid = await measure(rt, paid, "paid plan (growth), charged from the monthly quota");

    // A trial whose 5 signup credits are spent: every run is charged from a boost pack (the read path: reserve reads
    // the account and the boosts before its transaction), and each run also checks the trial milestones after it is
    // written (in the whole request, not in what charging adds).
    const trial = await seeded(rt, "bench-charging-trial@example.com");
    await db().entities.billingAccount.patch({ user_id: trial.userId }).set({ quota_remaining: 0 }).go();
    await grant(trial.userId, { source: "bench-charging", credits: Math.ceil(N * 0.7) + 5, bucket: "boost", expiresAt: new Date(Date.now() + 30 * 86_400_000) });
    const onTrial = await measure(rt, trial, "trial, charged from a boost pack");

    console.log("");
    printTable(["figure", "value", "target"], [
      ["added by charging p50, paid plan", `${fmtMs(onPaid.charge.p50)} ms`, `< ${TARGET_MS} ms: ${onPaid.charge.p50 < TARGET_MS ? "met" : "NOT met"}`],
      ["added by charging p99, paid plan", `${fmtMs(onPaid.charge.p99)} ms`, `< ${TARGET_MS} ms: ${onPaid.charge.p99 < TARGET_MS ? "met" : "NOT met"}`],
      ["added by charging p50, boost pack (read path)", `${fmtMs(onTrial.charge.p50)} ms`, "for reference"],
      ["added by charging p99, boost pack (read path)", `${fmtMs(onTrial.charge.p99)} ms`, "for reference"],
      ["share of the request, paid p50", `${((onPaid.charge.p50 / onPaid.request.p50) * 100).toFixed(0)} %`, "for reference"],
    ]);
  } finally {
    await rt.stop();
  }
  const warnEnd = busyWarning();
  console.log(`end: ${machineLine()}${warnEnd ? `\n${warnEnd}` : ""}`);
}
