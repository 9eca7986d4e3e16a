/**
 * Recommendations over HTTP (spec 01 Recommendation, Recommendation status, Recommendations endpoints, Limits;
 * DESIGN.md section 5: 422 INVALID_TRANSITION with valid_transitions, 402 SUBSCRIPTION_REQUIRED): create and
 * validation, list filters, get, patch (null clears), delete, every allowed status transition and a sample of
 * disallowed ones, batch status with mixed results, and generation from insights.
 */
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { runsOf } from "../../core/agent";
import { withAbortSignal } from "../../core/context";
import { dynamoClient } from "../../core/db/client";
import { generate } from "../../core/recommendation/generate";
import { call, newUser, newWorkspace } from "../support/api";
import { sourceWith } from "../support/sources";
import { expectEnvelope, withEnv } from "./_helpers";
import { deletedBeforeUpdate } from "../support/races";

type Rec = { id: string; status: string } & Record<string, any>;

let ws: { token: string; workspaceId: string; sourceId: string };
let outsider: string;

const create = (body: Record<string, unknown>, token = ws.token, workspaceId = ws.workspaceId) =>
  call("POST", "/api/recommendations", { token, body: { workspace_id: workspaceId, title: "Add a remember-me option", description: "Keep users signed in for 30 days", ...body } });

async function made(body: Record<string, unknown> = {}, token = ws.token, workspaceId = ws.workspaceId): Promise<Rec> {
  const res = await create(body, token, workspaceId);
  expect(res.status, res.text).toBe(201);
  return res.body;
}

const setStatus = (id: string, status: string, user_notes?: string) =>
  call("PATCH", `/api/recommendations/${id}/status`, { token: ws.token, body: user_notes === undefined ? { status } : { status, user_notes } });

/** An insight quoting `quote`, which must occur verbatim in `sourceId`, a research source of the workspace. */
async function insight(token: string, workspaceId: string, sourceId: string, title: string, quote: string, extra: Record<string, unknown> = {}) {
  const res = await call("POST", "/api/insights", {
    token,
    body: { workspace_id: workspaceId, insight_type: "pain_point", title, description: title, severity: "high", quotes: [{ text: quote, source_id: sourceId, speaker: "P1" }], ...extra },
  });
  expect(res.status, res.text).toBe(201);
  return res.body.id as string;
}

/** A new workspace with one insight per quote (each quoting it from one research source), and its owner's user id. */
async function workspaceWithInsights(name: string, quotes: string[]) {
  const { owner, workspace } = await newWorkspace(name);
  const src = await sourceWith(owner.token, workspace.id, quotes);
  const ids = await Promise.all(quotes.map((q) => insight(owner.token, workspace.id, src, q, q)));
  const userId = (await call("GET", "/api/auth/me", { token: owner.token })).body.id as string;
  return { owner, workspace, ids, userId };
}

beforeAll(async () => {
  const [{ owner, workspace }, stranger] = await Promise.all([newWorkspace("Recommendations"), newUser()]);
  ws = { token: owner.token, workspaceId: workspace.id, sourceId: await sourceWith(owner.token, workspace.id, ["I keep getting logged out"]) };
  outsider = stranger.token;
});

describe("POST /api/recommendations", () => {
  it("creates a recommendation with status suggested and every optional field (201)", async () => {
    const ins = await insight(ws.token, ws.workspaceId, ws.sourceId, "Users get logged out", "I keep getting logged out");
    const res = await create({
      addresses_insight_ids: [ins],
      rationale: "Logouts are the top complaint",
      effort_estimate: "small",
      effort_weeks: 1.5,
      impact_score: 0.8,
      success_metrics: ["Fewer sign-ins per user per week"],
      target_repo: "department-of-veterans-affairs/va-mobile-app",
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      workspace_id: ws.workspaceId,
      title: "Add a remember-me option",
      status: "suggested",
      addresses_insight_ids: [ins],
      rationale: "Logouts are the top complaint",
      effort_estimate: "small",
      effort_weeks: 1.5,
      impact_score: 0.8,
      success_metrics: ["Fewer sign-ins per user per week"],
      target_repo: "department-of-veterans-affairs/va-mobile-app",
      user_notes: null,
    });
    const got = await call("GET", `/api/recommendations/${res.body.id}`, { token: ws.token });
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);

    const bare = await made();
    expect(bare).toMatchObject({ status: "suggested", addresses_insight_ids: [], rationale: null, effort_estimate: null, effort_weeks: null, impact_score: null, success_metrics: [], target_repo: null });
  });

  it("validates target_repo (org/repo, at most 255 characters) and the other fields with 422", async () => {
    expect((await create({ target_repo: "org/repo" })).status).toBe(201);
    const longRepo = `org/${"r".repeat(252)}`;
    expect(longRepo).toHaveLength(256);
    for (const body of [
      { target_repo: "not a repo" },
      { target_repo: longRepo },
      { target_repo: "org/" },
      { impact_score: 1.5 },
      { impact_score: -0.1 },
      { effort_estimate: "huge" },
      { status: "accepted" },
      { title: "" },
      { addresses_insight_ids: ["nope"] },
    ]) {
      const res = await create(body);
      expectEnvelope(res, 422, "VALIDATION_ERROR");
      expect(res.body.errors.length).toBeGreaterThan(0);
    }
    const unknown = randomUUID();
    const res = await create({ addresses_insight_ids: [unknown] });
    expectEnvelope(res, 422, "VALIDATION_ERROR");
    expect(res.body.detail).toContain(unknown);
    expectEnvelope(await create({}, outsider), 403, "FORBIDDEN");
  });
});

describe("GET /api/recommendations", () => {
  it("filters by status, min_impact (0..1) and effort_estimate; total counts matches", async () => {
    const { owner, workspace } = await newWorkspace("Rec list");
    const mk = (body: Record<string, unknown>) => made(body, owner.token, workspace.id);
    const [low, high, mid, none] = await Promise.all([
      mk({ title: "low", impact_score: 0.2, effort_estimate: "small" }),
      mk({ title: "high", impact_score: 0.9, effort_estimate: "large" }),
      mk({ title: "mid", impact_score: 0.5, effort_estimate: "small" }),
      mk({ title: "none" }),
    ]);
    const acc = await call("PATCH", `/api/recommendations/${high.id}/status`, { token: owner.token, body: { status: "accepted" } });
    expect(acc.status).toBe(200);
    const q = (query: Record<string, string | number | undefined>) => call("GET", "/api/recommendations", { token: owner.token, query: { workspace_id: workspace.id, ...query } });
    const idsOf = (res: { body: { recommendations: Rec[] } }) => new Set(res.body.recommendations.map((r) => r.id));

    const all = await q({});
    expect(all.status, all.text).toBe(200);
    expect(all.body.total).toBe(4);
    expect(idsOf(all)).toEqual(new Set([low.id, high.id, mid.id, none.id]));
    expect(idsOf(await q({ status: "accepted" }))).toEqual(new Set([high.id]));
    expect(idsOf(await q({ status: "suggested" }))).toEqual(new Set([low.id, mid.id, none.id]));
    const impactful = await q({ min_impact: 0.5 });
    expect(idsOf(impactful)).toEqual(new Set([high.id, mid.id]));
    expect(impactful.body.total).toBe(2);
    expect(idsOf(await q({ min_impact: 1 }))).toEqual(new Set());
    expect(idsOf(await q({ min_impact: 0 })).size).toBe(4);
    expect(idsOf(await q({ effort_estimate: "small" }))).toEqual(new Set([low.id, mid.id]));
    expect(idsOf(await q({ effort_estimate: "small", min_impact: 0.3 }))).toEqual(new Set([mid.id]));
    const page = await q({ limit: 1, offset: 1 });
    expect(page.body.recommendations).toHaveLength(1);
    expect(page.body.total).toBe(4);
    for (const bad of [{ min_impact: 1.1 }, { min_impact: -0.5 }, { status: "done" }, { effort_estimate: "huge" }, { limit: 501 }]) {
      expectEnvelope(await q(bad), 422, "VALIDATION_ERROR");
    }
    expectEnvelope(await call("GET", "/api/recommendations", { token: outsider, query: { workspace_id: workspace.id } }), 403, "FORBIDDEN");
  });
});

describe("GET / PATCH / DELETE /api/recommendations/{id}", () => {
  it("patches given fields, null clears optional ones, status is not patchable here", async () => {
    const rec = await made({ rationale: "why", effort_estimate: "medium", effort_weeks: 3, impact_score: 0.4, target_repo: "org/repo", success_metrics: ["m"] });
    const res = await call("PATCH", `/api/recommendations/${rec.id}`, {
      token: ws.token,
      body: { title: "New title", impact_score: 0.7, rationale: null, target_repo: null, effort_weeks: null },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id: rec.id, title: "New title", description: rec.description, impact_score: 0.7, rationale: null, target_repo: null, effort_weeks: null, effort_estimate: "medium", success_metrics: ["m"], status: "suggested" });
    expect((await call("GET", `/api/recommendations/${rec.id}`, { token: ws.token })).body).toEqual(res.body);
    for (const body of [{ status: "accepted" }, { impact_score: 2 }, { target_repo: "not a repo" }, { title: null }]) {
      expectEnvelope(await call("PATCH", `/api/recommendations/${rec.id}`, { token: ws.token, body }), 422, "VALIDATION_ERROR");
    }
    expectEnvelope(await call("PATCH", `/api/recommendations/${rec.id}`, { token: outsider, body: { title: "x" } }), 404, "NOT_FOUND");
    expectEnvelope(await call("GET", `/api/recommendations/${rec.id}`, { token: outsider }), 404, "NOT_FOUND");
    expectEnvelope(await call("GET", `/api/recommendations/${randomUUID()}`, { token: ws.token }), 404, "NOT_FOUND");
  });

  it("an empty body writes nothing: updated_at stays (spec 01: only the provided fields change)", async () => {
    const rec = await made({ rationale: "why" });
    // A few milliseconds apart, so a write would show in updated_at.
    await new Promise((resolve) => setTimeout(resolve, 5));
    const res = await call("PATCH", `/api/recommendations/${rec.id}`, { token: ws.token, body: {} });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual(rec);
    expect((await call("GET", `/api/recommendations/${rec.id}`, { token: ws.token })).body).toEqual(rec);
    // Existence and membership are still checked.
    expectEnvelope(await call("PATCH", `/api/recommendations/${rec.id}`, { token: outsider, body: {} }), 404, "NOT_FOUND");
    expectEnvelope(await call("PATCH", `/api/recommendations/${randomUUID()}`, { token: ws.token, body: {} }), 404, "NOT_FOUND");
  });

  it("a PATCH may send back the addresses_insight_ids it read, a deleted insight's id included; an added unknown id is still 422", async () => {
    const kept = await insight(ws.token, ws.workspaceId, ws.sourceId, "Logged out often", "I keep getting logged out");
    const gone = await insight(ws.token, ws.workspaceId, ws.sourceId, "Sessions end early", "I keep getting logged out");
    const rec = await made({ addresses_insight_ids: [kept, gone] });
    expect((await call("DELETE", `/api/insights/${gone}`, { token: ws.token })).status).toBe(204);
    const read = (await call("GET", `/api/recommendations/${rec.id}`, { token: ws.token })).body;
    expect(read.addresses_insight_ids).toEqual([kept, gone]);

    const res = await call("PATCH", `/api/recommendations/${rec.id}`, { token: ws.token, body: { title: "Renamed", addresses_insight_ids: read.addresses_insight_ids } });

    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ title: "Renamed", addresses_insight_ids: [kept, gone] });
    const unknown = randomUUID();
    const added = await call("PATCH", `/api/recommendations/${rec.id}`, { token: ws.token, body: { addresses_insight_ids: [kept, gone, unknown] } });
    expectEnvelope(added, 422, "VALIDATION_ERROR");
    expect(added.text).toContain(unknown);
    expect(added.text).not.toContain(gone);
  });

  it("deletes: 204, then 404", async () => {
    const rec = await made();
    expectEnvelope(await call("DELETE", `/api/recommendations/${rec.id}`, { token: outsider }), 404, "NOT_FOUND");
    const del = await call("DELETE", `/api/recommendations/${rec.id}`, { token: ws.token });
    expect(del.status).toBe(204);
    expectEnvelope(await call("GET", `/api/recommendations/${rec.id}`, { token: ws.token }), 404, "NOT_FOUND");
    expectEnvelope(await call("DELETE", `/api/recommendations/${rec.id}`, { token: ws.token }), 404, "NOT_FOUND");
  });
});

describe("PATCH /api/recommendations/{id}/status", () => {
  const TABLE: Record<string, string[]> = {
    suggested: ["accepted", "rejected"],
    accepted: ["in_progress", "rejected", "suggested"],
    rejected: ["suggested"],
    in_progress: ["implemented", "accepted", "suggested"],
    implemented: ["suggested"],
  };
  const STATES = Object.keys(TABLE);

  it("walks every allowed transition, and refuses disallowed ones from every state with valid_transitions", async () => {
    const rec = await made();
    // A walk that takes each of the 10 allowed edges at least once.
    const walk = ["accepted", "in_progress", "implemented", "suggested", "rejected", "suggested", "accepted", "suggested", "accepted", "in_progress", "accepted", "rejected", "suggested", "accepted", "in_progress", "suggested"];
    const taken = new Set<string>();
    const refused = new Set<string>();
    let from = "suggested";
    for (const to of walk) {
      // Before moving on, one disallowed target from this state (rotating through them), which must not change it.
      const disallowed = STATES.filter((s) => !TABLE[from]!.includes(s));
      const wrong = disallowed.find((s) => !refused.has(`${from}->${s}`)) ?? disallowed[0]!;
      const bad = await setStatus(rec.id, wrong);
      expectEnvelope(bad, 422, "INVALID_TRANSITION");
      expect(bad.body.valid_transitions).toEqual(TABLE[from]);
      expect(bad.body.detail).toBe(`invalid_transition: ${from} -> ${wrong}`);
      refused.add(`${from}->${wrong}`);

      const res = await setStatus(rec.id, to, `to ${to}`);
      expect(res.status, `${from} -> ${to}: ${res.text}`).toBe(200);
      expect(res.body).toMatchObject({ id: rec.id, status: to, user_notes: `to ${to}` });
      taken.add(`${from}->${to}`);
      from = to;
    }
    const allowed = STATES.flatMap((f) => TABLE[f]!.map((t) => `${f}->${t}`));
    expect([...taken].sort()).toEqual(allowed.sort());
    // At least one refusal from every state, self-transitions among them.
    expect(new Set([...refused].map((r) => r.split("->")[0]))).toEqual(new Set(STATES));
    expect([...refused]).toEqual(expect.arrayContaining(["suggested->suggested", "suggested->in_progress", "suggested->implemented", "rejected->accepted"]));
    expect(refused.size).toBeGreaterThanOrEqual(10);
    const final = await call("GET", `/api/recommendations/${rec.id}`, { token: ws.token });
    expect(final.body.status).toBe("suggested");
  });

  it("keeps user_notes when none is given, validates the body, and guards membership", async () => {
    const rec = await made();
    expect((await setStatus(rec.id, "accepted", "looks good")).body.user_notes).toBe("looks good");
    const noNotes = await setStatus(rec.id, "in_progress");
    expect(noNotes.body).toMatchObject({ status: "in_progress", user_notes: "looks good" });
    expectEnvelope(await setStatus(rec.id, "done"), 422, "VALIDATION_ERROR");
    expectEnvelope(await call("PATCH", `/api/recommendations/${rec.id}/status`, { token: outsider, body: { status: "accepted" } }), 404, "NOT_FOUND");
    expectEnvelope(await setStatus(randomUUID(), "accepted"), 404, "NOT_FOUND");
  });
});

describe("a status change racing a DELETE", () => {
  it("is 404, and not_found in a batch, when the recommendation is deleted between the read and the write (it was 409)", async () => {
    const one = await made();
    const res = await deletedBeforeUpdate(`recommendation#${one.id}`, () => call("DELETE", `/api/recommendations/${one.id}`, { token: ws.token }), () => setStatus(one.id, "accepted"));
    expectEnvelope(res, 404, "NOT_FOUND");
    const [gone, kept] = [await made(), await made()];
    const batch = await deletedBeforeUpdate(`recommendation#${gone.id}`, () => call("DELETE", `/api/recommendations/${gone.id}`, { token: ws.token }), () =>
      call("PATCH", "/api/recommendations/batch/status", { token: ws.token, body: { workspace_id: ws.workspaceId, recommendation_ids: [gone.id, kept.id], status: "accepted" } }),
    );
    expect(batch.status, batch.text).toBe(200);
    expect(batch.body).toEqual({ updated_count: 1, failed_count: 1, errors: [{ recommendation_id: gone.id, error: "not_found", valid_transitions: [] }] });
  });
});

describe("PATCH /api/recommendations/batch/status", () => {
  it("updates the valid items and reports each invalid one as invalid_transition: <from> -> <to>", async () => {
    const [s1, s2, rejected, accepted] = await Promise.all([made(), made(), made(), made()]);
    expect((await setStatus(rejected.id, "rejected")).status).toBe(200);
    expect((await setStatus(accepted.id, "accepted")).status).toBe(200);
    const other = await newWorkspace("Other");
    const foreign = await made({}, other.owner.token, other.workspace.id);
    const unknown = randomUUID();

    const res = await call("PATCH", "/api/recommendations/batch/status", {
      token: ws.token,
      body: { workspace_id: ws.workspaceId, recommendation_ids: [s1.id, rejected.id, s2.id, accepted.id, foreign.id, unknown], status: "accepted", user_notes: "sprint 12" },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.updated_count).toBe(2);
    expect(res.body.failed_count).toBe(4);
    const byId = Object.fromEntries(res.body.errors.map((e: { recommendation_id: string }) => [e.recommendation_id, e]));
    expect(byId[rejected.id]).toEqual({ recommendation_id: rejected.id, error: "invalid_transition: rejected -> accepted", valid_transitions: ["suggested"] });
    expect(byId[accepted.id]).toEqual({ recommendation_id: accepted.id, error: "invalid_transition: accepted -> accepted", valid_transitions: ["in_progress", "rejected", "suggested"] });
    expect(byId[foreign.id]).toMatchObject({ error: "not_found" });
    expect(byId[unknown]).toMatchObject({ error: "not_found" });
    expect(byId[s1.id]).toBeUndefined();

    const get = async (id: string, token = ws.token) => (await call("GET", `/api/recommendations/${id}`, { token })).body;
    expect(await get(s1.id)).toMatchObject({ status: "accepted", user_notes: "sprint 12" });
    expect(await get(s2.id)).toMatchObject({ status: "accepted", user_notes: "sprint 12" });
    expect((await get(rejected.id)).status).toBe("rejected");
    expect((await get(foreign.id, other.owner.token)).status).toBe("suggested");

    expectEnvelope(
      await call("PATCH", "/api/recommendations/batch/status", { token: ws.token, body: { workspace_id: other.workspace.id, recommendation_ids: [foreign.id], status: "accepted" } }),
      403,
      "FORBIDDEN",
    );
    expectEnvelope(
      await call("PATCH", "/api/recommendations/batch/status", { token: ws.token, body: { workspace_id: ws.workspaceId, recommendation_ids: [], status: "accepted" } }),
      422,
      "VALIDATION_ERROR",
    );
  });
});

describe("POST /api/recommendations/generate", () => {
  it("generates 3 to 7 stored, prioritized recommendations grounded in the given insights, recorded as an agent run", async () => {
    const { owner, workspace } = await newWorkspace("Generate");
    const quotes = [
      "I keep getting logged out and have to sign in again every time",
      "It takes five screens to refill one prescription",
      "I wish the app reminded me about my appointments",
      "I never know where my messages from the doctor went",
      "Please add a dark mode",
    ];
    const src = await sourceWith(owner.token, workspace.id, quotes);
    const ids = await Promise.all([
      insight(owner.token, workspace.id, src, "Users get logged out and struggle to sign in", quotes[0]!, { frequency: 4 }),
      insight(owner.token, workspace.id, src, "Refilling prescriptions takes too many steps", quotes[1]!),
      insight(owner.token, workspace.id, src, "Users want appointment reminders", quotes[2]!, { insight_type: "feature_request", severity: "medium" }),
      insight(owner.token, workspace.id, src, "Secure messages are hard to find", quotes[3]!, { severity: "medium" }),
    ]);
    // An insight not given must not be addressed.
    const unrelated = await insight(owner.token, workspace.id, src, "Dark mode is missing", quotes[4]!);
    const res = await call("POST", "/api/recommendations/generate", { token: owner.token, body: { workspace_id: workspace.id, insight_ids: ids, focus_areas: ["sign-in"] } });
    expect(res.status, res.text).toBe(200);
    const recs: Rec[] = res.body.recommendations;
    expect(res.body.count).toBe(recs.length);
    expect(recs.length).toBeGreaterThanOrEqual(3);
    expect(recs.length).toBeLessThanOrEqual(7);
    expect(typeof res.body.prioritization_summary).toBe("string");
    expect(res.body.prioritization_summary.length).toBeGreaterThan(20);
    recs.forEach((r, k) => {
      expect(r.status).toBe("suggested");
      expect(r.workspace_id).toBe(workspace.id);
      expect(r.priority_rank).toBe(k + 1);
      expect(r.title.length).toBeGreaterThan(0);
      expect(r.rationale?.length).toBeGreaterThan(0);
      expect(r.addresses_insight_ids.length).toBeGreaterThan(0);
      for (const id of r.addresses_insight_ids) expect(ids).toContain(id);
      expect(r.addresses_insight_ids).not.toContain(unrelated);
      expect(r.impact_score).toBeGreaterThanOrEqual(0);
      expect(r.impact_score).toBeLessThanOrEqual(1);
      expect(["trivial", "small", "medium", "large", "xlarge"]).toContain(r.effort_estimate);
      expect(r.effort_weeks).toBeGreaterThan(0);
      expect(r.success_metrics.length).toBeGreaterThan(0);
    });
    // Every given insight is addressed by at least one recommendation.
    expect(new Set(recs.flatMap((r) => r.addresses_insight_ids))).toEqual(new Set(ids));
    const listed = await call("GET", "/api/recommendations", { token: owner.token, query: { workspace_id: workspace.id } });
    expect(new Set(listed.body.recommendations.map((r: Rec) => r.id))).toEqual(new Set(recs.map((r) => r.id)));
    // One generation is one creation time, so the list gives it in priority order (it could list rank 4 first).
    expect(new Set(recs.map((r) => r.created_at)).size).toBe(1);
    expect(listed.body.recommendations.map((r: Rec) => r.priority_rank)).toEqual(recs.map((_, k) => k + 1));
    const runs = (await runsOf(workspace.id)).filter((r) => r.agent_type === "recommendation");
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ status: "success", tool_name: "generate_recommendations" });
  });

  it("a generation whose person leaves while its set is being stored is a success, not a cancelled run (its set is there)", async () => {
    const { owner, workspace, ids, userId } = await workspaceWithInsights("Generate, then leave", ["I keep getting logged out", "Refills take too many steps", "Remind me of appointments"]);
    // The copilot's client disconnects (its stream's signal fires) as the set's transaction is sent.
    const left = new AbortController();
    const name = "leaveDuringCommit";
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        if (String(context.commandName).startsWith("TransactWrite") && JSON.stringify(args.input).includes('"recommendation"')) left.abort();
        return next(args);
      },
      { step: "initialize", name },
    );
    let out: Awaited<ReturnType<typeof generate>>;
    try {
      out = await withAbortSignal(left.signal, () => generate(userId, { workspace_id: workspace.id, insight_ids: ids, focus_areas: [] }));
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
    expect(left.signal.aborted).toBe(true);
    expect(out.count).toBeGreaterThan(0);
    const runs = (await runsOf(workspace.id)).filter((r) => r.agent_type === "recommendation");
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ status: "success", tool_name: "generate_recommendations" });
  });

  it("a generation whose person left before its set was stored writes nothing and is a cancelled run", async () => {
    const { owner, workspace, ids, userId } = await workspaceWithInsights("Generate after leaving", ["I keep getting logged out", "Refills take too many steps"]);
    // The client leaves while the insights are read, after the run's reservation: the model's answer is not stored.
    const left = new AbortController();
    const name = "leaveBeforeCommit";
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        if (String(context.commandName).startsWith("BatchGet") && JSON.stringify(args.input).includes(ids[0]!)) left.abort();
        return next(args);
      },
      { step: "initialize", name },
    );
    try {
      await expect(withAbortSignal(left.signal, () => generate(userId, { workspace_id: workspace.id, insight_ids: ids, focus_areas: [] }))).rejects.toThrow();
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
    const listed = await call("GET", "/api/recommendations", { token: owner.token, query: { workspace_id: workspace.id } });
    expect(listed.body.recommendations).toEqual([]);
    const runs = (await runsOf(workspace.id)).filter((r) => r.agent_type === "recommendation");
    expect(runs.map((r) => r.status)).toEqual(["partial"]);
  });

  it("refuses unknown insight ids (422 naming them), non-members (403) and workspaces without a subscription (402)", async () => {
    const known = await insight(ws.token, ws.workspaceId, ws.sourceId, "Users get logged out", "I keep getting logged out");
    const unknown = randomUUID();
    const res = await call("POST", "/api/recommendations/generate", { token: ws.token, body: { workspace_id: ws.workspaceId, insight_ids: [known, unknown] } });
    expectEnvelope(res, 422, "VALIDATION_ERROR");
    expect(res.body.detail).toContain(unknown);
    expect(res.body.errors[0]).toMatchObject({ loc: ["body", "insight_ids"], type: "unknown_id" });
    expectEnvelope(await call("POST", "/api/recommendations/generate", { token: ws.token, body: { workspace_id: ws.workspaceId, insight_ids: [] } }), 422, "VALIDATION_ERROR");
    expectEnvelope(await call("POST", "/api/recommendations/generate", { token: outsider, body: { workspace_id: ws.workspaceId, insight_ids: [known] } }), 403, "FORBIDDEN");

    const lapsed = await withEnv({ TRIAL_DAYS: "-1" }, () => newWorkspace("Trial over"));
    // A lapsed workspace cannot upload research (402), so its insight quotes nothing (a quote must name a source of its own).
    const ownRes = await call("POST", "/api/insights", {
      token: lapsed.owner.token,
      body: { workspace_id: lapsed.workspace.id, insight_type: "pain_point", title: "Users get logged out", description: "Users get logged out", severity: "high" },
    });
    expect(ownRes.status, ownRes.text).toBe(201);
    const own = ownRes.body.id as string;
    expectEnvelope(
      await call("POST", "/api/recommendations/generate", { token: lapsed.owner.token, body: { workspace_id: lapsed.workspace.id, insight_ids: [own] } }),
      402,
      "SUBSCRIPTION_REQUIRED",
    );
    const runs = await runsOf(lapsed.workspace.id);
    expect(runs).toHaveLength(0);
  });
});
