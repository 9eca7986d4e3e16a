/**
 * Billing, read side, over HTTP (spec 02 Billing, Subscription and credits, Trial milestones, Boost pack, Limits:
 * Plans, Compute budget, Credits; DESIGN.md 6.3): every GET answers its schema (VALIDATE_RESPONSES) with the figures
 * of the workspace OWNER's account, moved by real ledger operations, real uploads, documents, runs and messages.
 */
import { randomUUID } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { db } from "../../core/db/service";
import { dynamoClient } from "../../core/db/client";
import * as Chat from "../../core/chat";
import { PLANS } from "../../core/billing/plans";
import { accountSubscriptionId } from "../../core/billing/views";
import { accountOf, grant, reserve, settle } from "../../core/billing/ledger";
import { EFFORT_ENVELOPE, reservationFor } from "../../core/billing/charge";
import { creditsFor } from "../../core/billing/credits";
import { referralSource } from "../../core/billing/boost-record";
import { REFERRAL_CREDITS } from "../../core/billing/sync";
import { costUsd } from "../../core/ai/ports";
import { call, newUser, newWorkspace } from "../support/api";
import { expectEnvelope } from "./_helpers";
import { routes } from "../../functions/http/routes";
import type { RouteSpec } from "../../functions/lib/route";

const DAY = 86_400_000;

let owner: { id: string; token: string; email: string };
let workspaceId: string;
let member: { id: string; token: string; email: string };
let outsider: { token: string };

const get = (path: string, query: Record<string, string> = {}, token = owner.token) =>
  call("GET", `/api/billing/${path}`, { token, query: { workspace_id: workspaceId, ...query } });

async function ok(path: string, query: Record<string, string> = {}, token = owner.token) {
  const res = await get(path, query, token);
  expect(res.status, res.text).toBe(200);
  return res.body;
}

/**
 * The spending most figures below start from: a 40-credit pack, then a run reserving 8 and settling at 6.5 (250k
 * tokens, 0.5 USD): quota 5 used, the pack at 38.5, compute at 50 % of the trial's tokens and 25 % of its cost.
 */
async function spent() {
  await grant(owner.id, { source: `cs_${randomUUID()}`, credits: 40, bucket: "boost", expiresAt: new Date(Date.now() + 30 * DAY) });
  const runId = randomUUID();
  await reserve(owner.id, runId, 8);
  await settle(owner.id, runId, 6.5, { tokens: 250_000, costUsd: 0.5 });
}

/** A recorded agent run of the workspace (the item core/agent `recordRun` writes). */
const run = (agent_type: "synthesis" | "recommendation" | "chat" | "drafting" | "embedding", status: "success" | "failed" = "success", executed_at = new Date().toISOString()) =>
  db().entities.agentRun.create({
    id: randomUUID(), workspace_id: workspaceId, agent_type, engine: "local", latency_ms: 5, tokens_used: 100, cost_usd: 0, status, executed_at,
  }).go();

/**
 * Every case starts from its own workspace, owner (a fresh trial account: 5 credits), member and outsider, and builds
 * the state it reads itself (`spent`, `activity`): a case never depends on what an earlier one left, so each passes
 * alone (`-t`) and in any order.
 */
beforeEach(async () => {
  const w = await newWorkspace("Billing");
  owner = w.owner;
  workspaceId = w.workspace.id;
  member = await newUser();
  const added = await call("POST", `/api/workspaces/${workspaceId}/members`, { token: owner.token, body: { email: member.email, role: "member" } });
  expect(added.status, added.text).toBe(201);
  outsider = await newUser();
});

describe("GET /api/billing/plans", () => {
  it("lists the four plans with the spec's prices; growth is popular; none current without a workspace", async () => {
    const res = await call("GET", "/api/billing/plans", { token: outsider.token });
    expect(res.status, res.text).toBe(200);
    expect(res.body.current_plan).toBeNull();
    const byTier = Object.fromEntries(res.body.plans.map((p: any) => [p.tier, p]));
    expect(Object.keys(byTier)).toEqual(["trial", "pro", "growth", "power"]);
    expect([byTier.pro.price_monthly, byTier.pro.price_yearly]).toEqual([29, 319]);
    expect([byTier.growth.price_monthly, byTier.growth.price_yearly]).toEqual([89, 979]);
    expect([byTier.power.price_monthly, byTier.power.price_yearly]).toEqual([149, 1639]);
    expect([byTier.trial.price_monthly, byTier.trial.price_yearly]).toEqual([0, 0]);
    expect(byTier.growth.limits).toEqual(PLANS.growth);
    expect(res.body.plans.filter((p: any) => p.is_popular).map((p: any) => p.tier)).toEqual(["growth"]);
    expect(res.body.plans.every((p: any) => p.is_current === false)).toBe(true);
  });

  it("with workspace_id, the owner's account plan is current (for any member)", async () => {
    const body = await ok("plans", {}, member.token);
    expect(body.current_plan).toBe("trial");
    expect(body.plans.filter((p: any) => p.is_current).map((p: any) => p.tier)).toEqual(["trial"]);
  });
});

describe("GET /api/billing/subscription", () => {
  it("answers the owner's plan, status, period and limits; before any Stripe subscription the id is the account's", async () => {
    const body = await ok("subscription");
    const account = await accountOf(owner.id);
    expect(body).toMatchObject({
      id: accountSubscriptionId(owner.id), workspace_id: workspaceId, plan: "trial", status: "trialing", cancel_at_period_end: false,
      current_period_start: account.period_start, current_period_end: account.period_end, limits: PLANS.trial,
    });
    expect(body.trial_ends_at).toBe(account.period_end);
  });
});

describe("credits and boosts follow the ledger", () => {
  it("a fresh trial account holds the signup milestone's 5 credits", async () => {
    const body = await ok("credits");
    expect(body).toMatchObject({
      workspace_id: workspaceId, plan: "trial", monthly_quota: 5, monthly_used: 0, monthly_remaining: 5, bonus_credits: 0,
      total_available: 5, total_used: 0, total_remaining: 5, percentage: 0, is_blocked: false, reserved: 0,
    });
    expect((await ok("boosts")).boosts).toEqual([]);
  });

  it("a boost grant shows in /boosts and /credits, for a member too", async () => {
    const expiresAt = new Date(Date.now() + 30 * DAY);
    await grant(owner.id, { source: `cs_${randomUUID()}`, credits: 40, bucket: "boost", expiresAt });
    const boosts = (await ok("boosts", {}, member.token)).boosts;
    expect(boosts).toHaveLength(1);
    expect(boosts[0]).toMatchObject({ pack_type: "starter", credits_added: 40, credits_used: 0, credits_remaining: 40, expires_at: expiresAt.toISOString(), is_active: true });
    const credits = await ok("credits", {}, member.token);
    expect(credits).toMatchObject({ bonus_credits: 40, total_available: 45, total_remaining: 45 });
  });

  it("each boost record has a stable UUID id of its own; a referral grant is listed as referral, with its figures", async () => {
    const expiresAt = new Date(Date.now() + 30 * DAY);
    const session = `cs_${randomUUID()}`;
    await grant(owner.id, { source: session, credits: 40, bucket: "boost", expiresAt });
    // What the payments consumer grants a referrer (core/billing/sync.ts): 20 credits, keyed by the referred user.
    await grant(owner.id, { source: referralSource(randomUUID()), credits: REFERRAL_CREDITS, bucket: "boost", expiresAt });
    const first = (await ok("boosts")).boosts;
    expect(first).toHaveLength(2);
    for (const b of first) expect(b.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(new Set(first.map((b: any) => b.id)).size).toBe(2);
    expect(first.map((b: any) => b.id)).not.toContain(session);
    const byType = Object.fromEntries(first.map((b: any) => [b.pack_type, b]));
    expect(Object.keys(byType).sort()).toEqual(["referral", "starter"]);
    expect(byType.referral).toMatchObject({
      credits_added: REFERRAL_CREDITS, credits_used: 0, credits_remaining: REFERRAL_CREDITS, agent_runs_added: 40, agent_runs_remaining: 40,
      expires_at: expiresAt.toISOString(), is_active: true,
    });
    // The same grant answers the same id on every read (a member's too).
    expect((await ok("boosts", {}, member.token)).boosts.map((b: any) => b.id).sort()).toEqual(first.map((b: any) => b.id).sort());
  });

  it("reserve and settle move credits used: quota first, then the boost", async () => {
    await grant(owner.id, { source: `cs_${randomUUID()}`, credits: 40, bucket: "boost", expiresAt: new Date(Date.now() + 30 * DAY) });
    const runId = randomUUID();
    await reserve(owner.id, runId, 8);
    const held = await ok("credits");
    expect(held).toMatchObject({ reserved: 8, monthly_used: 5, total_used: 8, total_remaining: 37 });
    await settle(owner.id, runId, 6.5, { tokens: 250_000, costUsd: 0.5 });
    const after = await ok("credits");
    expect(after).toMatchObject({ reserved: 0, monthly_used: 5, monthly_remaining: 0, bonus_credits: 38.5, total_used: 6.5, total_remaining: 38.5 });
    expect(after.percentage).toBe(Math.round((6.5 / 45) * 1000) / 10);
    const boost = (await ok("boosts")).boosts[0];
    expect(boost).toMatchObject({ credits_used: 1.5, credits_remaining: 38.5 });
    const usage = await ok("usage");
    expect(usage.items.find((i: any) => i.usage_type === "agent_run")).toMatchObject({ current: 6.5, limit: 45 });
  });

  it("an expired pack is listed inactive and not counted", async () => {
    await spent();
    // Granted already expired (a grant's expiry is the caller's); the boost item is kept for the history.
    await grant(owner.id, { source: `cs_${randomUUID()}`, credits: 100, bucket: "boost", expiresAt: new Date(Date.now() - DAY) });
    const boosts = (await ok("boosts")).boosts;
    expect(boosts).toHaveLength(2);
    expect(boosts.find((b: any) => b.credits_added === 100)).toMatchObject({ pack_type: "plus", is_active: false });
    expect((await ok("credits")).bonus_credits).toBe(38.5);
  });
});

describe("GET /api/billing/compute", () => {
  it("ok, warning at 80 %, blocked at 100 % of the period's budget", async () => {
    await spent();
    const body = await ok("compute");
    // The settle above used 250k of the trial's 500k tokens and 0.5 of its 2 USD.
    expect(body).toMatchObject({
      workspace_id: workspaceId, plan: "trial", tokens_used: 250_000, token_budget: PLANS.trial.token_budget, token_percentage: 50,
      cost_usd: 0.5, cost_budget_usd: PLANS.trial.cost_target_usd, cost_percentage: 25, level: "ok", should_throttle: false, should_block: false,
      boost_runs_remaining: 77, boost_credits_remaining: 38.5,
    });
    await db().entities.billingAccount.patch({ user_id: owner.id }).set({ tokens_used: 400_000 }).go();
    expect(await ok("compute")).toMatchObject({ token_percentage: 80, level: "warning", should_throttle: true, should_block: false });
    expect((await ok("estimate", { effort: "low" })).warning).toBe(true);
    await db().entities.billingAccount.patch({ user_id: owner.id }).set({ cost_usd: 2 }).go();
    const blocked = await ok("compute");
    expect(blocked).toMatchObject({ cost_percentage: 100, level: "blocked", should_throttle: true, should_block: true });
    expect(blocked.message).toMatch(/used up/);
    expect((await ok("estimate", { effort: "low" })).blocked).toBe(true);
  });
});

describe("GET /api/billing/estimate", () => {
  // The figures of a model engine (the estimate answers for the engine in effect; the local engine's are in
  // charging.test.ts). Only the estimate reads AI_ENGINE here: no model is called.
  let engine: string | undefined;
  beforeEach(() => {
    engine = process.env.AI_ENGINE;
    process.env.AI_ENGINE = "bedrock";
  });
  afterEach(() => {
    if (engine === undefined) delete process.env.AI_ENGINE;
    else process.env.AI_ENGINE = engine;
  });

  const expected = (tier: "small" | "mid" | "large", effort: keyof typeof EFFORT_ENVELOPE, f: number) =>
    creditsFor(costUsd(tier, EFFORT_ENVELOPE[effort].input * f, EFFORT_ENVELOPE[effort].output * f), "success");

  it("prices the effort's envelope at its tier; low and high ends at half and twice", async () => {
    await spent();
    const body = await ok("estimate", { effort: "medium" });
    expect(body).toEqual({
      estimatedCredits: expected("mid", "medium", 1), creditRangeLow: expected("mid", "medium", 0.5), creditRangeHigh: expected("mid", "medium", 2),
      remainingCredits: 38.5, warning: false, blocked: false,
    });
    expect(body.creditRangeLow).toBeLessThanOrEqual(body.estimatedCredits);
    expect(body.estimatedCredits).toBeLessThanOrEqual(body.creditRangeHigh);
    // No effort: medium.
    expect((await ok("estimate")).estimatedCredits).toBe(body.estimatedCredits);
  });

  it("a model tier or a Claude model id overrides the effort's tier", async () => {
    expect((await ok("estimate", { effort: "low", model: "large" })).estimatedCredits).toBe(expected("large", "low", 1));
    expect((await ok("estimate", { effort: "high", model: "us.anthropic.claude-3-5-haiku-20241022-v1:0" })).estimatedCredits).toBe(expected("small", "high", 1));
    expect((await ok("estimate", { effort: "low", model: "some-other-model" })).estimatedCredits).toBe(expected("small", "low", 1));
  });

  it("blocked when the balance cannot cover the high end; a max run here is", async () => {
    await spent();
    const body = await ok("estimate", { effort: "max" });
    expect(body.creditRangeHigh).toBeGreaterThan(38.5);
    expect(body).toMatchObject({ blocked: true, warning: false, remainingCredits: 38.5 });
  });

  it("the high end is what a run at that effort reserves, for every effort (one table): blocked here means refused there", async () => {
    const runs = { low: ["small", false], medium: ["mid", false], high: ["large", false], max: ["large", true] } as const;
    for (const [effort, [tier, thinking]] of Object.entries(runs)) {
      const body = await ok("estimate", { effort });
      expect(body.creditRangeHigh, effort).toBe(reservationFor("bedrock", tier, { thinking }));
    }
  });

  it("on a named model the high end is what the run reserves at that effort on the model's tier; blocked agrees with it", async () => {
    // A run on a named model prices the effort's envelope at the model's tier (the copilot's `modelChoice` and
    // `startCharge`): a small model at effort high holds 2.5, a large one at effort low 8.5; with no effort, the tier's own.
    const cases: { q: Record<string, string>; held: number }[] = [
      { q: { effort: "high", model: "small" }, held: reservationFor("bedrock", "small", { effort: "high" }) },
      { q: { effort: "low", model: "large" }, held: reservationFor("bedrock", "large", { effort: "low" }) },
      { q: { model: "large" }, held: reservationFor("bedrock", "large") },
    ];
    expect(cases.map((c) => c.held)).toEqual([2.5, 8.5, 45]);
    for (const { q, held } of cases) expect((await ok("estimate", q)).creditRangeHigh, JSON.stringify(q)).toBe(held);
    await reserve(owner.id, randomUUID(), 3);
    await grant(owner.id, { source: `cs_${randomUUID()}`, credits: 8, bucket: "boost", expiresAt: new Date(Date.now() + 30 * DAY) });
    expect(await ok("estimate", { effort: "low", model: "large" })).toMatchObject({ remainingCredits: 10, blocked: false });
    expect(await ok("estimate", { model: "large" })).toMatchObject({ remainingCredits: 10, blocked: true });
  });

  it("422 for an unknown effort", async () => {
    expectEnvelope(await get("estimate", { effort: "extreme" }), 422, "VALIDATION_ERROR");
  });
});

describe("GET /api/billing/usage", () => {
  it("counts the workspace's sources, documents, runs and messages against the plan", async () => {
    const before = await ok("usage");
    expect(before).toMatchObject({ workspace_id: workspaceId, plan: "trial" });
    expect(before.items.map((i: any) => [i.usage_type, i.display_name, i.period])).toEqual([
      ["file_upload", "Research Sources", "total"],
      ["agent_run", "Agent Credits", "billing_period"],
      ["document_draft", "Documents", "billing_period"],
      ["synthesis", "Synthesis Runs", "daily"],
      ["recommendation", "Recommendation Generations", "billing_period"],
      ["chat_message", "Chat Messages", "billing_period"],
      ["integration_sync", "Integration Syncs", "billing_period"],
    ]);
    const up = await call("POST", "/api/research/upload-url", {
      token: owner.token,
      body: { workspace_id: workspaceId, source_type: "interview", title: "Usage", file_name: "u.txt", content_type: "text/plain", file_size_bytes: 12 },
    });
    expect(up.status, up.text).toBe(201);
    const doc = await call("POST", "/api/documents", { token: member.token, body: { workspace_id: workspaceId, document_type: "prd", title: "Usage PRD", content: "# Problem" } });
    expect(doc.status, doc.text).toBe(201);
    await run("synthesis");
    await run("synthesis", "success", new Date(Date.now() - 2 * DAY).toISOString()); // not today
    await run("recommendation");
    const conv = await Chat.create(member.id, { workspace_id: workspaceId });
    const c = { id: conv.id, workspace_id: workspaceId, user_id: member.id };
    await Chat.appendMessage(c, { role: "user", content: "What hurts?" });
    await Chat.appendMessage(c, { role: "assistant", content: "Exports." });

    const items = Object.fromEntries((await ok("usage", {}, member.token)).items.map((i: any) => [i.usage_type, i]));
    const was = Object.fromEntries(before.items.map((i: any) => [i.usage_type, i.current]));
    expect(items.file_upload).toMatchObject({ current: was.file_upload + 1, limit: PLANS.trial.max_research_sources });
    expect(items.file_upload.percentage).toBe(Math.round(((was.file_upload + 1) / PLANS.trial.max_research_sources!) * 1000) / 10);
    expect(items.document_draft).toMatchObject({ current: was.document_draft + 1, limit: PLANS.trial.max_documents });
    expect(items.synthesis).toMatchObject({ current: was.synthesis + 1, limit: null, percentage: 0 });
    expect(items.recommendation.current).toBe(was.recommendation + 1);
    expect(items.chat_message.current).toBe(was.chat_message + 1);
    expect(items.integration_sync).toMatchObject({ current: 0, limit: null }); // no sync here: see the integration_sync cases
  });
});

describe("GET /api/billing/usage: integration_sync", () => {
  const syncs = async (token = owner.token, ws = workspaceId) =>
    (await call("GET", "/api/billing/usage", { token, query: { workspace_id: ws } })).body.items.find((i: any) => i.usage_type === "integration_sync");

  it("the integration sync routes declare the count: codehost, planner and execution tickets, and no other route", () => {
    const counted = (Object.entries(routes) as [string, RouteSpec][]).filter(([, spec]) => spec.counts).map(([id, spec]) => [id, spec.counts]);
    expect(counted.sort()).toEqual([["codehost.sync", "integration_sync"], ["planner.sync", "integration_sync"], ["tickets.sync", "integration_sync"]]);
  });

  it("counts the workspace's manual syncs answered 2xx in the billing period; a refused sync is not counted", async () => {
    expect(await syncs()).toMatchObject({ current: 0, limit: null, percentage: 0, period: "billing_period" });
    const doc = await call("POST", "/api/documents", { token: owner.token, body: { workspace_id: workspaceId, document_type: "prd", title: "Synced PRD", content: "# Problem" } });
    expect(doc.status, doc.text).toBe(201);
    for (const token of [owner.token, member.token]) {
      const res = await call("POST", "/api/execution/sync", { token, body: { workspace_id: workspaceId, document_id: doc.body.id } });
      expect(res.status, res.text).toBe(200);
    }
    // No integration connected: refused, so not counted.
    expectEnvelope(await call("POST", "/api/integrations/codehost/sync", { token: owner.token, body: { workspace_id: workspaceId } }), 404, "NO_ACTIVE_INTEGRATION");
    expectEnvelope(await call("POST", "/api/integrations/planner/sync", { token: owner.token, body: { workspace_id: workspaceId } }), 404, "NO_ACTIVE_INTEGRATION");
    // A non-member's sync is refused before it runs.
    expectEnvelope(await call("POST", "/api/execution/sync", { token: outsider.token, body: { workspace_id: workspaceId, document_id: doc.body.id } }), 403, "FORBIDDEN");
    expect(await syncs(member.token)).toMatchObject({ current: 2, limit: null, period: "billing_period" });
    // Counted per workspace: another workspace of the same owner starts at 0.
    const other = await call("POST", "/api/workspaces", { token: owner.token, body: { name: "Other" } });
    expect(other.status, other.text).toBe(201);
    expect((await syncs(owner.token, other.body.id)).current).toBe(0);
  });

  it("a count of an earlier billing period reads as 0 and restarts with the next sync", async () => {
    const doc = await call("POST", "/api/documents", { token: owner.token, body: { workspace_id: workspaceId, document_type: "prd", title: "Old PRD", content: "# Problem" } });
    expect(doc.status, doc.text).toBe(201);
    // What a sync counted in the period before this one (a period starts at the account's period_start).
    await db().entities.usage.patch({ workspace_id: workspaceId }).set({ integration_syncs: 7, integration_syncs_period: "2000-01-01T00:00:00.000Z" }).go();
    expect((await syncs()).current).toBe(0);
    expect((await call("POST", "/api/execution/sync", { token: owner.token, body: { workspace_id: workspaceId, document_id: doc.body.id } })).status).toBe(200);
    expect((await syncs()).current).toBe(1);
  });
});

describe("GET /api/billing/milestones and /accomplishments", () => {
  it("signup is achieved and granted; first_run and engagement follow the workspace's runs", async () => {
    const fresh = await newWorkspace("Milestones");
    const q = { token: fresh.owner.token, query: { workspace_id: fresh.workspace.id } };
    const first = await call("GET", "/api/billing/milestones", q);
    expect(first.status, first.text).toBe(200);
    expect(first.body).toMatchObject({ workspace_id: fresh.workspace.id, plan: "trial", credits_earned: 5, credits_possible: 15 });
    expect(first.body.milestones.map((m: any) => [m.name, m.credits, m.achieved, m.granted])).toEqual([
      ["signup", 5, true, true], ["first_run", 5, false, false], ["engagement", 5, false, false],
    ]);
    const at = (ms: number) => new Date(Date.now() - ms).toISOString();
    const mk = (status: "success" | "failed", executed_at: string) =>
      db().entities.agentRun.create({ id: randomUUID(), workspace_id: fresh.workspace.id, agent_type: "chat", engine: "local", latency_ms: 1, status, executed_at }).go();
    await mk("failed", at(3000));
    const success = at(2000);
    await mk("success", success);
    let m = Object.fromEntries((await call("GET", "/api/billing/milestones", q)).body.milestones.map((x: any) => [x.name, x]));
    expect(m.first_run).toMatchObject({ achieved: true, achieved_at: success, granted: false });
    expect(m.engagement.achieved).toBe(false);
    const third = at(1000);
    await mk("success", third);
    m = Object.fromEntries((await call("GET", "/api/billing/milestones", q)).body.milestones.map((x: any) => [x.name, x]));
    expect(m.engagement).toMatchObject({ achieved: true, achieved_at: third });
  });

  it("milestones read only the workspace's first runs, oldest first, however many it has", async () => {
    const fresh = await newWorkspace("Many runs");
    const base = Date.now() - 3600_000;
    const at = (i: number) => new Date(base + i * 1000).toISOString();
    // An internal embedding run first (not counted), two failed runs, the first success (the third counted run), then
    // 150 later runs with sizeable inputs and outputs.
    const outcomes: ["embedding" | "chat", "success" | "failed"][] = [["embedding", "success"], ["chat", "failed"], ["chat", "failed"], ["chat", "success"]];
    for (let i = 0; i < 150; i++) outcomes.push(["chat", i % 2 ? "success" : "failed"]);
    const bulk = "x".repeat(2000);
    await db()
      .entities.agentRun.put(
        outcomes.map(([agent_type, status], i) => ({
          id: randomUUID(), workspace_id: fresh.workspace.id, agent_type, engine: "local", latency_ms: 1, status, executed_at: at(i), input_data: { bulk }, output_data: { bulk },
        })),
      )
      .go();
    const name = `countRunQueries-${randomUUID()}`;
    const pages: number[] = [];
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        const out = await next(args);
        const text = JSON.stringify(args.input);
        if (context.commandName === "QueryCommand" && text.includes(fresh.workspace.id) && text.includes("agentrun#")) {
          pages.push((out.output as { ScannedCount?: number }).ScannedCount ?? 0);
        }
        return out;
      },
      { step: "initialize", name },
    );
    let body: any;
    try {
      const res = await call("GET", "/api/billing/milestones", { token: fresh.owner.token, query: { workspace_id: fresh.workspace.id } });
      expect(res.status, res.text).toBe(200);
      body = res.body;
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
    const m = Object.fromEntries(body.milestones.map((x: any) => [x.name, x]));
    expect(m.first_run).toMatchObject({ achieved: true, achieved_at: at(3) });
    expect(m.engagement).toMatchObject({ achieved: true, achieved_at: at(3) });
    // One page of a few runs, not the workspace's 154.
    expect(pages.length).toBe(1);
    expect(pages[0]!).toBeLessThanOrEqual(20);
  });

  it("accomplishments count this period's work, runs and credits used", async () => {
    await spent();
    const up = await call("POST", "/api/research/upload-url", {
      token: owner.token,
      body: { workspace_id: workspaceId, source_type: "interview", title: "Work", file_name: "w.txt", content_type: "text/plain", file_size_bytes: 12 },
    });
    expect(up.status, up.text).toBe(201);
    expect((await call("POST", "/api/documents", { token: member.token, body: { workspace_id: workspaceId, document_type: "prd", title: "Work PRD", content: "# Problem" } })).status).toBe(201);
    await run("synthesis");
    await run("synthesis", "success", new Date(Date.now() - 2 * DAY).toISOString()); // before the period
    await run("recommendation");
    const conv = await Chat.create(member.id, { workspace_id: workspaceId });
    await Chat.appendMessage({ id: conv.id, workspace_id: workspaceId, user_id: member.id }, { role: "user", content: "What hurts?" });
    const body = await ok("accomplishments", {}, member.token);
    expect(body).toMatchObject({ workspace_id: workspaceId, credits_used: 6.5 });
    expect(body.counts).toMatchObject({ sources: 1, documents: 1, chat_messages: 1, insights: 0, recommendations: 0, syntheses: 1 });
    // The synthesis and recommendation runs of today; the synthesis of two days ago is before the period.
    expect(body.total_runs).toBe(2);
  });
});

describe("access and validation", () => {
  it.each(["plans", "subscription", "credits", "usage", "boosts", "compute", "estimate", "milestones", "accomplishments"])("%s: 403 for a non-member", async (path) => {
    expectEnvelope(await get(path, {}, outsider.token), 403, "FORBIDDEN");
  });

  it.each(["subscription", "credits", "usage", "boosts", "compute", "estimate", "milestones", "accomplishments"])("%s: 422 without or with a bad workspace_id", async (path) => {
    expectEnvelope(await call("GET", `/api/billing/${path}`, { token: owner.token }), 422, "VALIDATION_ERROR");
    expectEnvelope(await call("GET", `/api/billing/${path}`, { token: owner.token, query: { workspace_id: "nope" } }), 422, "VALIDATION_ERROR");
  });

  it("plans: 422 for a bad workspace_id", async () => {
    expectEnvelope(await call("GET", "/api/billing/plans", { token: owner.token, query: { workspace_id: "nope" } }), 422, "VALIDATION_ERROR");
  });
});
