/**
 * Charging (issue #12 item 3; spec 02 Credits, Trial milestones; DESIGN.md 6.3): every AI operation reserves from the
 * workspace owner's account before it starts and settles after it, through the real handlers against DynamoDB Local;
 * the copilot's stream over a real SSE client. The local engine costs 0 USD, so the spec's minimum charges apply:
 * success 0.5, failed without cost 0 (a chat message at least 0.25, below a success's 0.5).
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../core/db/service";
import { recordRun } from "../../core/agent";
import { accountOf, balanceOf, reserve, settle } from "../../core/billing/ledger";
import { sweepStaleHolds, STALE_HOLD_MS } from "../../core/billing/sweeper";
import { reserveAlongside, TRIAL_CREDIT_CAP } from "../../core/billing/charge";
import { call, newUser, newWorkspace } from "../support/api";
import { setAccount, topUp } from "../support/billing";
import { sourceWith } from "../support/sources";
import { liveGateway, readStream } from "../support/sse";
import { expectEnvelope } from "./_helpers";

const LINES = [
  "I get logged out every time I update the app and have to sign in again.",
  "Signing in takes forever because the code never arrives by text.",
  "The sign-in code arrives late, so I give up and call the pharmacy instead.",
];

async function ledgerOf(userId: string) {
  const { data } = await db().entities.creditLedger.query.byUser({ user_id: userId }).go({ consistent: true, pages: "all" });
  return data;
}
async function holdsOf(userId: string) {
  const { data } = await db().entities.creditHold.query.byUser({ user_id: userId }).go({ consistent: true, pages: "all" });
  return data;
}
async function runsOf(workspaceId: string) {
  const { data } = await db().entities.agentRun.query.byWorkspace({ workspace_id: workspaceId }).go({ consistent: true, pages: "all" });
  return data;
}
/** Empty the account's spendable quota (what a month of runs would do), without touching the ledger's history. */
const drain = (userId: string) => db().entities.billingAccount.patch({ user_id: userId }).set({ quota_remaining: 0 }).go();

const synthesize = (token: string, workspaceId: string, sourceId: string) =>
  call("POST", "/api/research/synthesize", { token, body: { workspace_id: workspaceId, source_ids: [sourceId], synthesis_type: "quick" } });

describe("an AI operation reserves before it runs and settles after it", () => {
  let owner: Awaited<ReturnType<typeof newWorkspace>>["owner"];
  let ws: string;
  let source: string;
  beforeAll(async () => {
    const w = await newWorkspace("Charged");
    owner = w.owner;
    ws = w.workspace.id;
    source = await sourceWith(owner.token, ws, LINES);
  });

  it("a synthesis on the local engine is charged its 0.5 minimum from the owner's account, once, and the run says so", async () => {
    const before = await balanceOf(owner.id);
    const res = await synthesize(owner.token, ws, source);
    expect(res.status, res.text).toBe(200);

    const runs = (await runsOf(ws)).filter((r) => r.agent_type === "synthesis");
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ status: "success", credits_charged: 0.5, user_id: owner.id, engine: "local" });
    const ledger = await ledgerOf(owner.id);
    const mine = ledger.filter((l) => l.run_id === runs[0]!.id);
    expect(mine.map((l) => l.kind).sort()).toEqual(["reserve", "settle"]);
    expect(mine.find((l) => l.kind === "settle")).toMatchObject({ held: 0.5, charged: 0.5, shortfall: 0 });
    expect(await holdsOf(owner.id)).toEqual([]);
    const after = await balanceOf(owner.id);
    expect(after.total_used - before.total_used).toBe(0.5);
    expect(after.reserved).toBe(0);
  });

  it("a member's run is charged to the owner's account, not the member's", async () => {
    const member = await newUser();
    const add = await call("POST", `/api/workspaces/${ws}/members`, { token: owner.token, body: { email: member.email, role: "member" } });
    expect(add.status, add.text).toBe(201);
    const ownerBefore = await balanceOf(owner.id);
    const res = await synthesize(member.token, ws, source);
    expect(res.status, res.text).toBe(200);
    expect((await balanceOf(owner.id)).total_used - ownerBefore.total_used).toBe(0.5);
    expect(await ledgerOf(member.id)).toEqual([]);
    const run = (await runsOf(ws)).find((r) => r.user_id === member.id);
    expect(run).toMatchObject({ credits_charged: 0.5 });
  });

  it("GET /credits reports the caller's daily soft cap: (monthly_quota / members / 30) x 2, and what they used today", async () => {
    const res = await call("GET", "/api/billing/credits", { token: owner.token, query: { workspace_id: ws } });
    expect(res.status, res.text).toBe(200);
    const members = 2;
    expect(res.body.daily_soft_cap).toEqual({
      limit: Math.round((res.body.monthly_quota / members / 30) * 2 * 100) / 100,
      used_today: 0.5,
      members,
      exceeded: 0.5 > Math.round((res.body.monthly_quota / members / 30) * 2 * 100) / 100,
    });
  });

  it("a failed run without model cost is charged 0 and gives its whole reservation back", async () => {
    const before = await balanceOf(owner.id);
    await expect(
      recordRun({ workspaceId: ws, userId: owner.id, agentType: "recommendation", toolName: "generate_recommendations", engine: "local", input: {} }, async () => {
        throw new Error("engine exploded");
      }),
    ).rejects.toThrow("engine exploded");
    const run = (await runsOf(ws)).find((r) => r.error_message === "engine exploded");
    expect(run).toMatchObject({ status: "failed", credits_charged: 0 });
    expect(await holdsOf(owner.id)).toEqual([]);
    const after = await balanceOf(owner.id);
    expect(after.total_used).toBe(before.total_used);
    // This is the workspace's third run: the engagement milestone adds to the quota, nothing else changed.
    expect(after.total_remaining - before.total_remaining).toBe(after.monthly_quota - before.monthly_quota);
  });

  it("a replayed run (the same run id, as a pending action's replay derives) is reserved and charged once", async () => {
    const runId = randomUUID();
    const before = await balanceOf(owner.id);
    const opts = { workspaceId: ws, userId: owner.id, agentType: "drafting" as const, toolName: "draft_document", engine: "local", input: {}, runId };
    await recordRun(opts, async () => "first");
    await recordRun(opts, async () => "replay");
    const mine = (await ledgerOf(owner.id)).filter((l) => l.run_id === runId);
    expect(mine.map((l) => l.kind).sort()).toEqual(["reserve", "settle"]);
    expect((await balanceOf(owner.id)).total_used - before.total_used).toBe(0.5);
  });
});

describe("reserving beside the operation's reads", () => {
  it("reads that fail give the reservation back; a reservation that fails is the answer, whatever the reads found", async () => {
    const { owner, workspace } = await newWorkspace("Alongside");
    const runId = randomUUID();
    await expect(
      reserveAlongside({ workspaceId: workspace.id, runId, engine: "local" }, async () => {
        throw new Error("unknown insight ids");
      }),
    ).rejects.toThrow("unknown insight ids");
    expect(await holdsOf(owner.id)).toEqual([]);
    expect((await ledgerOf(owner.id)).filter((l) => l.run_id === runId).map((l) => l.kind).sort()).toEqual(["release", "reserve"]);
    expect((await balanceOf(owner.id)).total_remaining).toBe(5);

    await drain(owner.id);
    const refused = await reserveAlongside({ workspaceId: workspace.id, runId: randomUUID(), engine: "local" }, async () => "read").catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: "USAGE_LIMIT_EXCEEDED", extra: expect.objectContaining({ reason: "credits_exhausted" }) });

    await topUp(owner.id, 40);
    const ok = await reserveAlongside({ workspaceId: workspace.id, runId: randomUUID(), engine: "local" }, async () => "read");
    expect(ok.value).toBe("read");
    expect(ok.charge.held).toBe(0.5);
    expect(ok.charge.waitMs).toBeLessThanOrEqual(ok.charge.reserveMs);
    await ok.charge.release();
  });

  it("a refusal that lands while the reads are still running is the answer, never an unhandled rejection", async () => {
    const { owner, workspace } = await newWorkspace("Alongside slow reads");
    await drain(owner.id);
    const unhandled: unknown[] = [];
    const onUnhandled = (err: unknown) => unhandled.push(err);
    process.on("unhandledRejection", onUnhandled);
    try {
      // Reads slower than the refused reservation: the 402 settles first, and is awaited only after them.
      const refused = await reserveAlongside({ workspaceId: workspace.id, runId: randomUUID(), engine: "local" }, async () => {
        await new Promise((r) => setTimeout(r, 300));
        return "read";
      }).catch((e: unknown) => e);
      expect(refused).toMatchObject({ code: "USAGE_LIMIT_EXCEEDED" });
      await new Promise((r) => setTimeout(r, 50));
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });
});

describe("a blocked account is refused before any model call", () => {
  let gw: Awaited<ReturnType<typeof liveGateway>>;
  beforeAll(async () => {
    gw = await liveGateway();
  });
  afterAll(async () => gw.close());

  it("no credits left: 402 credits_exhausted on synthesis and on the chat stream before it opens; nothing runs or is stored", async () => {
    const { owner, workspace } = await newWorkspace("Empty");
    const source = await sourceWith(owner.token, workspace.id, LINES);
    await drain(owner.id);

    const synth = await synthesize(owner.token, workspace.id, source);
    expectEnvelope(synth, 402, "USAGE_LIMIT_EXCEEDED");
    expect(synth.body).toMatchObject({ reason: "credits_exhausted", required: 0.5, available: 0 });
    const chat = await call("POST", "/api/stream/chat", { token: owner.token, body: { workspace_id: workspace.id, prompt: "What do users struggle with?" } });
    expectEnvelope(chat, 402, "USAGE_LIMIT_EXCEEDED");
    expect(chat.headers["content-type"]).toMatch(/application\/json/);

    expect(await runsOf(workspace.id)).toEqual([]);
    const insights = await call("GET", "/api/insights", { token: owner.token, query: { workspace_id: workspace.id } });
    expect(insights.body.total).toBe(0);
    const conversations = await call("GET", "/api/chat/conversations", { token: owner.token, query: { workspace_id: workspace.id } });
    expect(conversations.status).toBe(200);
    expect(conversations.body.total).toBe(0);
    const credits = await call("GET", "/api/billing/credits", { token: owner.token, query: { workspace_id: workspace.id } });
    expect(credits.body.is_blocked).toBe(true);
    const estimate = await call("GET", "/api/billing/estimate", { token: owner.token, query: { workspace_id: workspace.id } });
    expect(estimate.body.blocked).toBe(true);
  });

  it("GET /estimate answers for the engine in effect: 2 credits left on the local engine is not blocked and the chat runs; 0.25 left is blocked and refused", async () => {
    const prompt = "What do users struggle with?";
    const estimateOf = async (token: string, workspaceId: string) => {
      const res = await call("GET", "/api/billing/estimate", { token, query: { workspace_id: workspaceId } });
      expect(res.status, res.text).toBe(200);
      return res.body;
    };
    // A trial account of 5 credits with 3 held by a run in progress: 2 left, more than the local engine's 0.5.
    const { owner, workspace } = await newWorkspace("Local estimate");
    await reserve(owner.id, randomUUID(), 3);
    expect(await estimateOf(owner.token, workspace.id)).toEqual({
      estimatedCredits: 0.5, creditRangeLow: 0.5, creditRangeHigh: 0.5, remainingCredits: 2, warning: false, blocked: false,
    });
    const events = await readStream(gw.base, "/api/stream/chat", owner.token, { workspace_id: workspace.id, prompt });
    expect(events.find((e) => e.event === "done"), JSON.stringify(events.map((e) => e.event))).toBeDefined();

    // Less than the local engine's reservation left: blocked, and the run is refused before its stream opens.
    const low = await newWorkspace("Local estimate, too low");
    await reserve(low.owner.id, randomUUID(), 4.75);
    expect(await estimateOf(low.owner.token, low.workspace.id)).toMatchObject({ remainingCredits: 0.25, blocked: true, creditRangeHigh: 0.5 });
    const refused = await call("POST", "/api/stream/chat", { token: low.owner.token, body: { workspace_id: low.workspace.id, prompt } });
    expectEnvelope(refused, 402, "USAGE_LIMIT_EXCEEDED");
    expect(refused.body).toMatchObject({ reason: "credits_exhausted", required: 0.5, available: 0.25 });
  });

  it("quota used up but a boost pack left: the run is charged from the boost", async () => {
    const { owner, workspace } = await newWorkspace("Boosted");
    const source = await sourceWith(owner.token, workspace.id, LINES);
    await drain(owner.id);
    await topUp(owner.id, 40);
    const res = await synthesize(owner.token, workspace.id, source);
    expect(res.status, res.text).toBe(200);
    const balance = await balanceOf(owner.id);
    expect(balance.bonus_credits).toBe(39.5);
    const reserved = (await ledgerOf(owner.id)).find((l) => l.kind === "reserve");
    expect(reserved).toMatchObject({ quota: 0, credits: 0.5 });
    expect(reserved!.boosts).toEqual([expect.objectContaining({ credits: -0.5 })]);
    // The first successful run then earns the first_run milestone into the (empty) quota.
    expect(balance.monthly_remaining).toBe(5);
  });

  it("compute budget used up: 402 compute_budget, though credits remain", async () => {
    const { owner, workspace } = await newWorkspace("Over budget");
    const source = await sourceWith(owner.token, workspace.id, LINES);
    const account = await accountOf(owner.id);
    await db().entities.billingAccount.patch({ user_id: owner.id }).set({ tokens_used: 500_000 }).go();
    expect(account.plan).toBe("trial");
    const res = await synthesize(owner.token, workspace.id, source);
    expectEnvelope(res, 402, "USAGE_LIMIT_EXCEEDED");
    expect(res.body.reason).toBe("compute_budget");
    expect((await balanceOf(owner.id)).total_remaining).toBe(5);
  });

  it("the chat stream's done event carries the credits the ledger charged", async () => {
    const { owner, workspace } = await newWorkspace("Chatty");
    const events = await readStream(gw.base, "/api/stream/chat", owner.token, { workspace_id: workspace.id, prompt: "What do users struggle with?" });
    const done = events.find((e) => e.event === "done");
    expect(done, JSON.stringify(events.map((e) => e.event))).toBeDefined();
    expect(done!.data.credits).toBe(0.5);
    const settle = (await ledgerOf(owner.id)).find((l) => l.kind === "settle");
    expect(settle).toMatchObject({ charged: 0.5 });
    const run = (await runsOf(workspace.id)).find((r) => r.agent_type === "chat");
    expect(run).toMatchObject({ credits_charged: 0.5, id: settle!.run_id });
  });
});

describe("trial milestones are granted by the runs that earn them (spec 02: 5.0 each, once per workspace)", () => {
  const ON_PURPOSE = "failed on purpose";
  /** One charged run; only the failure asked for is swallowed: a refusal (402) or any other error fails the test. */
  const run = (ws: string, userId: string, ok = true) =>
    recordRun({ workspaceId: ws, userId, agentType: "block_action", toolName: "expand_block", engine: "local", input: {} }, async () => {
      if (!ok) throw new Error(ON_PURPOSE);
      return "ok";
    }).then(
      (value) => expect(value).toBe("ok"),
      (err: unknown) => {
        if (ok || !(err instanceof Error) || err.message !== ON_PURPOSE) throw err;
      },
    );
  const granted = async (userId: string) => (await ledgerOf(userId)).filter((l) => l.kind === "grant").map((l) => l.key).sort();

  it("first_run at the first success, engagement at the third run; never twice; the milestones view agrees", async () => {
    const { owner, workspace } = await newWorkspace("Milestones");
    await run(workspace.id, owner.id, false);
    expect(await granted(owner.id)).toEqual(["grant#milestone#signup"]);
    await run(workspace.id, owner.id);
    expect(await granted(owner.id)).toEqual(["grant#milestone#first_run#" + workspace.id, "grant#milestone#signup"]);
    await run(workspace.id, owner.id);
    await run(workspace.id, owner.id);
    const keys = await granted(owner.id);
    expect(keys).toEqual([`grant#milestone#engagement#${workspace.id}`, `grant#milestone#first_run#${workspace.id}`, "grant#milestone#signup"]);
    expect((await balanceOf(owner.id)).monthly_quota).toBe(15);
    const view = await call("GET", "/api/billing/milestones", { token: owner.token, query: { workspace_id: workspace.id } });
    expect(view.body.milestones.map((m: any) => [m.name, m.achieved, m.granted])).toEqual([
      ["signup", true, true],
      ["first_run", true, true],
      ["engagement", true, true],
    ]);
    expect(view.body.credits_earned).toBe(15);
  });

  it("a second workspace of the same owner earns its own, up to the trial cap of 25", async () => {
    const { owner, workspace } = await newWorkspace("First");
    const second = await call("POST", "/api/workspaces", { token: owner.token, body: { name: "Second" } });
    expect(second.status, second.text).toBe(201);
    for (const ws of [workspace.id, second.body.id]) for (let i = 0; i < 3; i++) await run(ws, owner.id);
    expect((await balanceOf(owner.id)).monthly_quota).toBe(TRIAL_CREDIT_CAP);
    expect((await granted(owner.id)).length).toBe(5);
  });

  it("a paid plan earns no trial milestones", async () => {
    const { owner, workspace } = await newWorkspace("Paid");
    await setAccount(owner.id, { plan: "pro", status: "active" });
    for (let i = 0; i < 3; i++) await run(workspace.id, owner.id);
    // The three runs did run and were charged (a run refused or failed would earn nothing either, and prove nothing).
    const runs = await runsOf(workspace.id);
    expect(runs.map((r) => [r.status, r.credits_charged])).toEqual([["success", 0.5], ["success", 0.5], ["success", 0.5]]);
    expect(await granted(owner.id)).toEqual(["grant#milestone#signup"]);
  });
});

describe("the stale-reservation sweeper", () => {
  // Scoped to the test's account: the table is shared with files running at the same time, whose runs hold credits.
  it("releases a hold older than 20 minutes once; a settle after it charges the balance once", async () => {
    const { owner } = await newWorkspace("Crashed run");
    const runId = randomUUID();
    await reserve(owner.id, runId, 0.5);
    expect((await balanceOf(owner.id)).reserved).toBe(0.5);

    const early = await sweepStaleHolds({ now: new Date(Date.now() + STALE_HOLD_MS - 60_000), userId: owner.id });
    expect((await holdsOf(owner.id)).map((h) => h.run_id)).toEqual([runId]);
    expect(early.errors).toEqual([]);

    const later = new Date(Date.now() + STALE_HOLD_MS + 60_000);
    const first = await sweepStaleHolds({ now: later, userId: owner.id });
    expect(first.errors).toEqual([]);
    expect(await holdsOf(owner.id)).toEqual([]);
    expect(await balanceOf(owner.id)).toMatchObject({ reserved: 0, total_remaining: 5 });
    const again = await sweepStaleHolds({ now: later, userId: owner.id });
    expect((await ledgerOf(owner.id)).filter((l) => l.kind === "release")).toHaveLength(1);
    expect(again.errors).toEqual([]);

    // The run was alive after all and settles late: charged from the balance, once.
    await settle(owner.id, runId, 0.5);
    await settle(owner.id, runId, 0.5);
    expect(await balanceOf(owner.id)).toMatchObject({ reserved: 0, total_remaining: 4.5 });
  });
});
