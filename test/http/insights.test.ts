/**
 * Insights over HTTP (spec 01 Insight, Insights endpoints, Limits; DESIGN.md section 5: notes, rating, frequency =
 * distinct sources): create, list (filters, pagination, newest first, archived hidden), get, patch, delete, semantic
 * search (ranking, archived included, filters, default limit, mode), batch archive/unarchive, cross-workspace access.
 * The text fallback of search lives in insights-search-fallback.test.ts (it needs its own process).
 */
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { ProvisionedThroughputExceededException } from "@aws-sdk/client-dynamodb";
import { db } from "../../core/db/service";
import { dynamoClient } from "../../core/db/client";
import { loadSnapshot, readHead } from "../../core/insight/search-index";
import { call, newUser, newWorkspace } from "../support/api";
import { sourceWith } from "../support/sources";
import { expectEnvelope } from "./_helpers";

type Token = string;

const createInsight = (token: Token, workspaceId: string, body: Record<string, unknown> = {}) =>
  call("POST", "/api/insights", {
    token,
    body: { workspace_id: workspaceId, insight_type: "pain_point", title: `Insight ${randomUUID().slice(0, 6)}`, description: "Something users said", ...body },
  });

async function created(token: Token, workspaceId: string, body: Record<string, unknown> = {}) {
  const res = await createInsight(token, workspaceId, body);
  expect(res.status, res.text).toBe(201);
  return res.body as { id: string; title: string; created_at: string } & Record<string, any>;
}

const list = (token: Token, query: Record<string, string | number | boolean | undefined>) => call("GET", "/api/insights", { token, query });
const ids = (res: { body: { insights: { id: string }[] } }) => res.body.insights.map((i) => i.id);

let A: { token: Token; workspaceId: string };
let outsider: { token: Token; id: string };
/** Three research sources of A: an insight may only name its own workspace's sources, and quote them verbatim. */
let sA: [string, string, string];

beforeAll(async () => {
  const [{ owner, workspace }, stranger] = await Promise.all([newWorkspace("Insights"), newUser()]);
  A = { token: owner.token, workspaceId: workspace.id };
  outsider = { token: stranger.token, id: stranger.id };
  sA = (await Promise.all([
    sourceWith(A.token, A.workspaceId, ["Please add a dark mode", "My eyes hurt at night"], "p1.md"),
    sourceWith(A.token, A.workspaceId, ["The screen is far too bright"], "p2.md"),
    sourceWith(A.token, A.workspaceId, ["Dark theme please"], "p3.md"),
  ])) as [string, string, string];
});

describe("POST /api/insights", () => {
  it("creates an insight (201) whose frequency defaults to the number of distinct sources", async () => {
    const [s1, s2, s3] = sA;
    const res = await createInsight(A.token, A.workspaceId, {
      insight_type: "feature_request",
      title: "Users want dark mode",
      description: "Several users asked for a dark theme",
      severity: "high",
      impact: "Evening usage",
      source_ids: [s1, s2],
      quotes: [
        { text: "Please add a dark mode", source_id: s1, speaker: "P1" },
        { text: "My eyes hurt at night", source_id: s1 },
        { text: "Dark theme please", source_id: s3 },
      ],
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      workspace_id: A.workspaceId,
      insight_type: "feature_request",
      title: "Users want dark mode",
      severity: "high",
      impact: "Evening usage",
      is_archived: false,
      frequency: 3,
      mention_count: 3,
      notes: null,
      rating: null,
    });
    expect(new Set(res.body.source_ids)).toEqual(new Set([s1, s2, s3]));
    expect(res.body.quotes[1]).toEqual({ text: "My eyes hurt at night", source_id: s1, speaker: null });

    const bare = await created(A.token, A.workspaceId);
    expect(bare).toMatchObject({ frequency: 1, severity: "medium", source_ids: [], quotes: [], impact: null });
    const explicit = await created(A.token, A.workspaceId, { frequency: 7, source_ids: [s1] });
    expect(explicit.frequency).toBe(7);
  });

  it("rejects invalid bodies with the 422 validation envelope naming the fields", async () => {
    const res = await call("POST", "/api/insights", {
      token: A.token,
      body: { workspace_id: A.workspaceId, insight_type: "rumour", description: "", frequency: 0, quotes: [{ text: "x", source_id: "nope" }] },
    });
    expectEnvelope(res, 422, "VALIDATION_ERROR");
    const locs = res.body.errors.map((e: { loc: (string | number)[] }) => e.loc.join("."));
    expect(locs).toEqual(expect.arrayContaining(["body.insight_type", "body.title", "body.description", "body.frequency", "body.quotes.0.source_id"]));
    for (const e of res.body.errors) expect(typeof e.msg).toBe("string");
    expectEnvelope(await createInsight(A.token, A.workspaceId, { colour: "red" }), 422, "VALIDATION_ERROR");
    expect((await list(A.token, { workspace_id: A.workspaceId, insight_type: "rumour" })).status).toBe(422);
  });

  it("refuses a non-member and an unknown workspace alike (403)", async () => {
    expectEnvelope(await createInsight(outsider.token, A.workspaceId), 403, "FORBIDDEN");
    expectEnvelope(await createInsight(A.token, randomUUID()), 403, "FORBIDDEN");
  });
});

describe("GET /api/insights", () => {
  let ws: { token: Token; workspaceId: string };
  let made: Record<string, { id: string; created_at: string }>;

  beforeAll(async () => {
    const { owner, workspace } = await newWorkspace("List");
    ws = { token: owner.token, workspaceId: workspace.id };
    // Distinct sources of the workspace: min_frequency filters on frequency = number of distinct sources.
    const [s1, s2, s3] = await Promise.all(["a", "b", "c"].map((k) => sourceWith(ws.token, ws.workspaceId, [`Interview ${k}`], `${k}.md`)));
    const specs: [string, Record<string, unknown>][] = [
      ["oldPain", { insight_type: "pain_point", severity: "low", source_ids: [s1] }],
      ["wideOpp", { insight_type: "opportunity", severity: "high", source_ids: [s1, s2, s3] }],
      ["critPain", { insight_type: "pain_point", severity: "critical", source_ids: [s1, s2] }],
      ["archived", { insight_type: "pain_point", severity: "critical", source_ids: [s1, s2] }],
      ["newReq", { insight_type: "feature_request", severity: "medium" }],
    ];
    made = {};
    // Sequential, so created_at orders them.
    for (const [name, body] of specs) made[name] = await created(ws.token, ws.workspaceId, { title: name, ...body });
    const arch = await call("PATCH", `/api/insights/${made.archived!.id}`, { token: ws.token, body: { is_archived: true } });
    expect(arch.status, arch.text).toBe(200);
  });

  it("lists newest first with total, hiding archived insights by default", async () => {
    const res = await list(ws.token, { workspace_id: ws.workspaceId });
    expect(res.status, res.text).toBe(200);
    expect(ids(res)).toEqual(["newReq", "critPain", "wideOpp", "oldPain"].map((n) => made[n]!.id));
    expect(res.body.total).toBe(4);
    const archived = await list(ws.token, { workspace_id: ws.workspaceId, is_archived: true });
    expect(ids(archived)).toEqual([made.archived!.id]);
    expect(archived.body.insights[0].is_archived).toBe(true);
    expect(ids(await list(ws.token, { workspace_id: ws.workspaceId, is_archived: false }))).toHaveLength(4);
  });

  it("filters by insight_type, severity and min_frequency (>= 1)", async () => {
    const q = { workspace_id: ws.workspaceId };
    expect(ids(await list(ws.token, { ...q, insight_type: "pain_point" }))).toEqual([made.critPain!.id, made.oldPain!.id]);
    expect(ids(await list(ws.token, { ...q, severity: "critical" }))).toEqual([made.critPain!.id]);
    expect(ids(await list(ws.token, { ...q, severity: "critical", is_archived: true }))).toEqual([made.archived!.id]);
    const wide = await list(ws.token, { ...q, min_frequency: 2 });
    expect(ids(wide)).toEqual([made.critPain!.id, made.wideOpp!.id]);
    expect(wide.body.total).toBe(2);
    expect(ids(await list(ws.token, { ...q, min_frequency: 3, insight_type: "opportunity" }))).toEqual([made.wideOpp!.id]);
    expect(ids(await list(ws.token, { ...q, min_frequency: 1 }))).toHaveLength(4);
    expectEnvelope(await list(ws.token, { ...q, min_frequency: 0 }), 422, "VALIDATION_ERROR");
    expectEnvelope(await list(ws.token, { ...q, severity: "urgent" }), 422, "VALIDATION_ERROR");
  });

  it("paginates with limit and offset; total counts every match", async () => {
    const page = await list(ws.token, { workspace_id: ws.workspaceId, limit: 2, offset: 1 });
    expect(ids(page)).toEqual([made.critPain!.id, made.wideOpp!.id]);
    expect(page.body.total).toBe(4);
    const past = await list(ws.token, { workspace_id: ws.workspaceId, offset: 10 });
    expect(past.body).toEqual({ insights: [], total: 4 });
    for (const bad of [{ limit: 501 }, { limit: 0 }, { offset: -1 }, { limit: "many" }]) {
      expectEnvelope(await list(ws.token, { workspace_id: ws.workspaceId, ...bad }), 422, "VALIDATION_ERROR");
    }
    expectEnvelope(await call("GET", "/api/insights", { token: ws.token }), 422, "VALIDATION_ERROR");
  });

  it("returns at most 200 by default and up to 500 with limit", async () => {
    const { owner, workspace } = await newWorkspace("Many insights");
    // 201 insights written straight through the insight entity (creating them one by one over HTTP would be slow).
    const items = Array.from({ length: 201 }, (_, k) => ({
      id: randomUUID(),
      workspace_id: workspace.id,
      insight_type: "behavior",
      title: `Bulk ${k}`,
      description: "bulk",
      created_at: new Date(Date.UTC(2024, 0, 1, 0, 0, k)).toISOString(),
    }));
    await db().entities.insight.put(items).go();
    const byDefault = await list(owner.token, { workspace_id: workspace.id });
    expect(byDefault.status, byDefault.text).toBe(200);
    expect(byDefault.body.insights).toHaveLength(200);
    expect(byDefault.body.total).toBe(201);
    expect(byDefault.body.insights[0].title).toBe("Bulk 200");
    const all = await list(owner.token, { workspace_id: workspace.id, limit: 500 });
    expect(all.body.insights).toHaveLength(201);
    expect(all.body.insights[200].title).toBe("Bulk 0");
  });

  it("refuses a non-member (403)", async () => {
    expectEnvelope(await list(outsider.token, { workspace_id: ws.workspaceId }), 403, "FORBIDDEN");
  });
});

describe("GET / PATCH / DELETE /api/insights/{id}", () => {
  it("gets one insight; unknown id 404; a non-member fetching it by id the same 404", async () => {
    const one = await created(A.token, A.workspaceId, { title: "Fetch me" });
    const res = await call("GET", `/api/insights/${one.id}`, { token: A.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(one);
    expectEnvelope(await call("GET", `/api/insights/${randomUUID()}`, { token: A.token }), 404, "NOT_FOUND");
    expectEnvelope(await call("GET", "/api/insights/not-a-uuid", { token: A.token }), 422, "VALIDATION_ERROR");
    expectEnvelope(await call("GET", `/api/insights/${one.id}`, { token: outsider.token }), 404, "NOT_FOUND");
    expectEnvelope(await call("PATCH", `/api/insights/${one.id}`, { token: outsider.token, body: { title: "Hijacked" } }), 404, "NOT_FOUND");
    expectEnvelope(await call("DELETE", `/api/insights/${one.id}`, { token: outsider.token }), 404, "NOT_FOUND");
    const after = await call("GET", `/api/insights/${one.id}`, { token: A.token });
    expect(after.body).toEqual(one);
  });

  it("patches only the given fields; rating 1-5; null clears notes and rating", async () => {
    const one = await created(A.token, A.workspaceId, { title: "Before", description: "Old", severity: "low", impact: "Some" });
    const res = await call("PATCH", `/api/insights/${one.id}`, {
      token: A.token,
      body: { title: "After", description: "New", severity: "critical", is_archived: true, notes: "Check with support", rating: 5 },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id: one.id, title: "After", description: "New", severity: "critical", is_archived: true, notes: "Check with support", rating: 5, impact: "Some", insight_type: "pain_point" });
    const rating1 = await call("PATCH", `/api/insights/${one.id}`, { token: A.token, body: { rating: 1 } });
    expect(rating1.body).toMatchObject({ rating: 1, notes: "Check with support", title: "After" });

    for (const body of [{ rating: 6 }, { rating: 0 }, { rating: 2.5 }, { severity: "urgent" }, { title: "" }, { insight_type: "behavior" }]) {
      expectEnvelope(await call("PATCH", `/api/insights/${one.id}`, { token: A.token, body }), 422, "VALIDATION_ERROR");
    }
    const cleared = await call("PATCH", `/api/insights/${one.id}`, { token: A.token, body: { notes: null, rating: null } });
    expect(cleared.status, cleared.text).toBe(200);
    expect(cleared.body).toMatchObject({ notes: null, rating: null, title: "After" });
    expect((await call("GET", `/api/insights/${one.id}`, { token: A.token })).body).toMatchObject({ notes: null, rating: null, is_archived: true });
    // An emptied note field clears the note too.
    expect((await call("PATCH", `/api/insights/${one.id}`, { token: A.token, body: { notes: "Temporary" } })).body.notes).toBe("Temporary");
    expect((await call("PATCH", `/api/insights/${one.id}`, { token: A.token, body: { notes: "" } })).body.notes).toBeNull();
    expectEnvelope(await call("PATCH", `/api/insights/${randomUUID()}`, { token: A.token, body: { title: "x" } }), 404, "NOT_FOUND");
  });

  it("an empty body writes nothing: updated_at stays (spec 01: only the provided fields change)", async () => {
    const one = await created(A.token, A.workspaceId, { title: "Untouched" });
    // A few milliseconds apart, so a write would show in updated_at.
    await new Promise((resolve) => setTimeout(resolve, 5));
    const res = await call("PATCH", `/api/insights/${one.id}`, { token: A.token, body: {} });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual(one);
    expect((await call("GET", `/api/insights/${one.id}`, { token: A.token })).body).toEqual(one);
    // Existence and membership are still checked.
    expectEnvelope(await call("PATCH", `/api/insights/${one.id}`, { token: outsider.token, body: {} }), 404, "NOT_FOUND");
    expectEnvelope(await call("PATCH", `/api/insights/${randomUUID()}`, { token: A.token, body: {} }), 404, "NOT_FOUND");
  });

  it("deletes permanently: 204, then 404", async () => {
    const one = await created(A.token, A.workspaceId);
    const del = await call("DELETE", `/api/insights/${one.id}`, { token: A.token });
    expect(del.status).toBe(204);
    expect(del.text).toBe("");
    expectEnvelope(await call("GET", `/api/insights/${one.id}`, { token: A.token }), 404, "NOT_FOUND");
    expectEnvelope(await call("DELETE", `/api/insights/${one.id}`, { token: A.token }), 404, "NOT_FOUND");
    const all = await list(A.token, { workspace_id: A.workspaceId, limit: 500 });
    expect(ids(all)).not.toContain(one.id);
  });
});

describe("POST /api/insights/batch", () => {
  it("archives and unarchives the workspace's insights, counting only those that changed; other workspaces untouched", async () => {
    const other = await newWorkspace("Other");
    const [a, b, c, foreign] = await Promise.all([
      created(A.token, A.workspaceId),
      created(A.token, A.workspaceId),
      created(A.token, A.workspaceId),
      created(other.owner.token, other.workspace.id),
    ]);
    const batch = (token: Token, workspace_id: string, insight_ids: string[], action: string) =>
      call("POST", "/api/insights/batch", { token, body: { workspace_id, insight_ids, action } });

    const archived = await batch(A.token, A.workspaceId, [a.id, b.id, b.id, foreign.id, randomUUID()], "archive");
    expect(archived.status, archived.text).toBe(200);
    expect(archived.body.updated_count).toBe(2);
    expect(new Set(archived.body.insight_ids)).toEqual(new Set([a.id, b.id]));
    const get = async (token: Token, id: string) => (await call("GET", `/api/insights/${id}`, { token })).body.is_archived;
    expect(await get(A.token, a.id)).toBe(true);
    expect(await get(A.token, b.id)).toBe(true);
    expect(await get(A.token, c.id)).toBe(false);
    expect(await get(other.owner.token, foreign.id)).toBe(false);

    const again = await batch(A.token, A.workspaceId, [a.id, c.id], "archive");
    expect(again.body).toEqual({ updated_count: 1, insight_ids: [c.id] });

    const back = await batch(A.token, A.workspaceId, [a.id, b.id, foreign.id], "unarchive");
    expect(back.body.updated_count).toBe(2);
    expect(new Set(back.body.insight_ids)).toEqual(new Set([a.id, b.id]));
    expect(await get(A.token, a.id)).toBe(false);
    expect(await get(A.token, c.id)).toBe(true);

    expectEnvelope(await batch(A.token, other.workspace.id, [foreign.id], "archive"), 403, "FORBIDDEN");
    expect(await get(other.owner.token, foreign.id)).toBe(false);
    expectEnvelope(await batch(A.token, A.workspaceId, [a.id], "delete"), 422, "VALIDATION_ERROR");
    expectEnvelope(await batch(A.token, A.workspaceId, [], "archive"), 422, "VALIDATION_ERROR");
  });

  /**
   * DynamoDB throttling the archive writes (`ProvisionedThroughputExceededException`, thrown before the SDK's own
   * retries, as it ends when those are spent): the `nth` UpdateItem of `is_archived` once, or every one of `onlyId`.
   */
  function throttleArchiveWrites(opts: { nth?: number; onlyId?: string }): { thrown: () => number; remove: () => void } {
    const name = `throttleArchiveWrites-${Math.random()}`;
    let seen = 0;
    let thrown = 0;
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        const text = JSON.stringify(args.input);
        if (/^Update/.test(context.commandName ?? "") && text.includes("is_archived")) {
          seen++;
          if (opts.nth !== undefined ? seen === opts.nth : text.includes(`insight#${opts.onlyId}`)) {
            thrown++;
            throw new ProvisionedThroughputExceededException({ message: "The level of configured provisioned throughput for the table was exceeded", $metadata: {} });
          }
        }
        return next(args);
      },
      { step: "initialize", name },
    );
    return { thrown: () => thrown, remove: () => dynamoClient().middlewareStack.remove(name) };
  }

  const batchOf = (workspace_id: string, insight_ids: string[], action: string) =>
    call("POST", "/api/insights/batch", { token: A.token, body: { workspace_id, insight_ids, action } });

  it("a throttled archive write is tried again: every insight changes and the answer names them all (not a 500 after some landed)", async () => {
    const made = await Promise.all(Array.from({ length: 5 }, () => created(A.token, A.workspaceId)));
    const throttle = throttleArchiveWrites({ nth: 3 });
    let res;
    try {
      res = await batchOf(A.workspaceId, made.map((i) => i.id), "archive");
    } finally {
      throttle.remove();
    }
    expect(throttle.thrown()).toBe(1);
    expect(res.status, res.text).toBe(200);
    expect(res.body.updated_count).toBe(5);
    expect(new Set(res.body.insight_ids)).toEqual(new Set(made.map((i) => i.id)));
  });

  it("writes that stay throttled: 503 naming the insights changed, the snapshot shows exactly those, and the same request again finishes the rest", async () => {
    const made = await Promise.all(Array.from({ length: 4 }, () => created(A.token, A.workspaceId)));
    const stuck = made[1]!.id;
    const throttle = throttleArchiveWrites({ onlyId: stuck });
    let res;
    try {
      res = await batchOf(A.workspaceId, made.map((i) => i.id), "archive");
    } finally {
      throttle.remove();
    }
    expect(throttle.thrown()).toBeGreaterThan(1); // tried again before giving up
    expectEnvelope(res, 503, "SERVICE_UNAVAILABLE");
    const done = made.map((i) => i.id).filter((id) => id !== stuck);
    expect(res.body.updated_count).toBe(3);
    expect(new Set(res.body.insight_ids)).toEqual(new Set(done));
    expect(res.body.detail).toMatch(/3 insights were archived.*same request again/);
    // The search snapshot applied the partial batch: rows of the changed ones archived, the stuck one not, none pending.
    const rows = new Map((await loadSnapshot(A.workspaceId)).rows.map((r) => [r.id, r.view?.is_archived]));
    for (const id of done) expect(rows.get(id)).toBe(true);
    expect(rows.get(stuck)).toBe(false);
    expect((await readHead(A.workspaceId)).pending.map((p) => p.id)).not.toContain(stuck);

    const again = await batchOf(A.workspaceId, made.map((i) => i.id), "archive");
    expect(again.status, again.text).toBe(200);
    expect(again.body).toEqual({ updated_count: 1, insight_ids: [stuck] });
    expect((await call("GET", `/api/insights/${stuck}`, { token: A.token })).body.is_archived).toBe(true);
  });
});

describe("POST /api/insights/search", () => {
  let ws: { token: Token; workspaceId: string };
  let topics: Record<string, { id: string }>;
  const search = (body: Record<string, unknown>) => call("POST", "/api/insights/search", { token: ws.token, body: { workspace_id: ws.workspaceId, ...body } });

  beforeAll(async () => {
    const { owner, workspace } = await newWorkspace("Search");
    ws = { token: owner.token, workspaceId: workspace.id };
    const [s1, s2] = await Promise.all(["a", "b"].map((k) => sourceWith(ws.token, ws.workspaceId, [`Interview ${k}`], `${k}.md`)));
    const specs: [string, Record<string, unknown>][] = [
      ["logout", { title: "Users are logged out and must sign in again", description: "People lose their session several times a day and have to re-enter their password.", severity: "high", source_ids: [s1, s2] }],
      ["refill", { title: "Refilling a prescription takes too many steps", description: "Ordering more medication needs five screens.", severity: "medium" }],
      ["reminder", { title: "Users want appointment reminders", description: "People forget their doctor visits and ask for a notification the day before.", insight_type: "feature_request", severity: "medium" }],
      ["crash", { title: "The app crashes when uploading photos", description: "Attaching an image to a message closes the app.", severity: "critical" }],
      ["pricing", { title: "The pricing page is confusing", description: "Buyers cannot tell which plan includes exports.", insight_type: "opportunity", severity: "low" }],
    ];
    const made = await Promise.all(specs.map(([, body]) => created(ws.token, ws.workspaceId, body)));
    topics = Object.fromEntries(specs.map(([name], k) => [name, made[k]!]));
  }, 60_000);

  it("ranks the relevant insight first for a paraphrased query (semantic mode), with scores", async () => {
    const res = await search({ query: "my session expires and I have to authenticate all over again" });
    expect(res.status, res.text).toBe(200);
    expect(res.body.mode).toBe("semantic");
    expect(res.body.query).toBe("my session expires and I have to authenticate all over again");
    expect(res.body.insights[0].id).toBe(topics.logout!.id);
    const scores = res.body.insights.map((i: { score: number }) => i.score);
    expect([...scores].sort((x, y) => y - x)).toEqual(scores);
    expect(res.body.total).toBe(res.body.insights.length);

    const meds = await search({ query: "getting more of my medicine is tedious" });
    expect(meds.body.insights[0].id).toBe(topics.refill!.id);
  });

  it("still finds archived insights", async () => {
    const arch = await call("PATCH", `/api/insights/${topics.crash!.id}`, { token: ws.token, body: { is_archived: true } });
    expect(arch.status).toBe(200);
    const res = await search({ query: "the application quits when I attach a picture" });
    expect(res.body.insights[0]).toMatchObject({ id: topics.crash!.id, is_archived: true });
    const listed = await list(ws.token, { workspace_id: ws.workspaceId });
    expect(ids(listed)).not.toContain(topics.crash!.id);
  });

  it("applies insight_type, severity and min_frequency filters", async () => {
    const q = "users are unhappy with the app";
    const byType = await search({ query: q, insight_type: "feature_request" });
    expect(byType.status, byType.text).toBe(200);
    expect(byType.body.insights.every((i: { insight_type: string }) => i.insight_type === "feature_request")).toBe(true);
    const bySeverity = await search({ query: "sign in again", severity: "medium" });
    expect(bySeverity.body.insights.map((i: { id: string }) => i.id)).not.toContain(topics.logout!.id);
    expect(bySeverity.body.insights.every((i: { severity: string }) => i.severity === "medium")).toBe(true);
    const wide = await search({ query: "sign in again", min_frequency: 2 });
    expect(wide.body.insights.map((i: { id: string }) => i.id)).toEqual([topics.logout!.id]);
    expectEnvelope(await search({ query: "x", min_frequency: 0 }), 422, "VALIDATION_ERROR");
    expectEnvelope(await search({ query: "" }), 422, "VALIDATION_ERROR");
    expectEnvelope(await search({ query: "x", limit: 0 }), 422, "VALIDATION_ERROR");
  });

  it("returns at most 10 by default, more with limit, and total counts all hits", async () => {
    const { owner, workspace } = await newWorkspace("Search many");
    await Promise.all(
      Array.from({ length: 12 }, (_, k) =>
        created(owner.token, workspace.id, { title: `Checkout problem number ${k}`, description: `The checkout fails at step ${k}` }),
      ),
    );
    const res = await call("POST", "/api/insights/search", { token: owner.token, body: { workspace_id: workspace.id, query: "checkout" } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.insights).toHaveLength(10);
    expect(res.body.total).toBe(12);
    const more = await call("POST", "/api/insights/search", { token: owner.token, body: { workspace_id: workspace.id, query: "checkout", limit: 11 } });
    expect(more.body.insights).toHaveLength(11);
    expectEnvelope(await call("POST", "/api/insights/search", { token: outsider.token, body: { workspace_id: workspace.id, query: "checkout" } }), 403, "FORBIDDEN");
  });

  it("sees insight changes at once (a created or retitled insight is searchable immediately)", async () => {
    const fresh = await created(ws.token, ws.workspaceId, { title: "Exporting reports to spreadsheets is missing", description: "Managers copy numbers by hand into Excel." });
    const res = await search({ query: "download my data as a CSV file" });
    expect(res.body.insights[0].id).toBe(fresh.id);
    await call("PATCH", `/api/insights/${fresh.id}`, { token: ws.token, body: { title: "Dark mode is missing", description: "The screen is too bright at night." } });
    const after = await search({ query: "download my data as a CSV file" });
    expect(after.body.insights[0]?.id).not.toBe(fresh.id);
  });
});

describe("list pages stay under Lambda's 6 MB answer", () => {
  it("a page of insights and of recommendations at their fields' limits ends early; the next page starts where it ended", async () => {
    const { owner, workspace } = await newWorkspace("Big pages");
    const big = (c: string, n: number) => c.repeat(n);
    const now = Date.now();
    const insights = Array.from({ length: 240 }, (_, i) => ({
      id: randomUUID(), workspace_id: workspace.id, insight_type: "pain_point" as const, title: `Long insight ${i}`,
      description: big("d", 10_000), impact: big("i", 5_000), notes: big("n", 10_000), created_at: new Date(now - i * 1000).toISOString(),
    }));
    const recs = Array.from({ length: 140 }, (_, i) => ({
      id: randomUUID(), workspace_id: workspace.id, title: `Long recommendation ${i}`, description: big("d", 20_000), rationale: big("r", 20_000),
      created_at: new Date(now - i * 1000).toISOString(),
    }));
    await db().entities.insight.put(insights).go();
    await db().entities.recommendation.put(recs).go();

    for (const [path, key, n] of [["/api/insights", "insights", 240], ["/api/recommendations", "recommendations", 140]] as const) {
      const first = await call("GET", path, { token: owner.token, query: { workspace_id: workspace.id, limit: 500 } });
      expect(first.status, first.text.slice(0, 300)).toBe(200);
      expect(Buffer.byteLength(first.text)).toBeLessThan(6 * 1024 * 1024);
      const given = first.body[key].length as number;
      expect(given).toBeGreaterThan(0);
      expect(given).toBeLessThan(n);
      expect(first.body.total).toBe(n);
      const seen = new Set<string>(first.body[key].map((x: { id: string }) => x.id));
      for (let offset = given; offset < n; ) {
        const next = await call("GET", path, { token: owner.token, query: { workspace_id: workspace.id, limit: 500, offset } });
        expect(Buffer.byteLength(next.text)).toBeLessThan(6 * 1024 * 1024);
        for (const x of next.body[key]) seen.add(x.id);
        offset += next.body[key].length;
      }
      expect(seen.size).toBe(n);
    }
  }, 120_000);
});
