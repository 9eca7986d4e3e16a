/**
 * `POST /api/insights/search` over the per-workspace search snapshot (core/insight/search-index.ts), through the real
 * handler: only the query is embedded on a search (insight vectors are written with the insights); a deleted insight
 * is never returned and a new one never missed, also by a container that had the workspace cached; a change whose
 * writer died is applied by the next search once stale; a workspace whose insights predate the snapshot gets one on
 * its first search, from the stored insights, without embedding them. A search reads the membership and the snapshot
 * head in one BatchGetItem and answers from the snapshot's rows, which follow every change (rating, notes, archive,
 * text); an insight whose change is under way is read from the table (its shown attributes only); rows stored before
 * rows carried their view are rewritten by the first search; a non-member gets 403 and no insight is read; a repeated
 * query is not embedded again (the container's query-embedding cache). A head a request keeps never hides that
 * request's own change, even when one of its reads ran beside the change, nor lets another caller skip the membership.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { DeleteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { embedder } from "../../core/ai/select";
import { Config } from "../../core/config";
import { dynamoClient } from "../../core/db/client";
import { db } from "../../core/db/service";
import { clearSearchCache, HEAD_REUSE_MS, prefetchSearchHead, search as searchInsights, snapshotInsights } from "../../core/insight/search";
import { requestScope, withRequestScope } from "../../core/context";
import { requireMember, requireMemberWithWorkspace } from "../../core/workspace";
import { create as createInsight, remove as removeInsight } from "../../core/insight";
import { CreateInsightInput } from "../../core/insight/schema";
import { decodeShard, encodeShard, headKey, keptHeadKey, LEXICAL_MAX_BYTES, loadSnapshot, readHead, saveLexical, shardOf, STALE_PENDING_MS, type SearchRow } from "../../core/insight/search-index";
import { storeFails } from "../support/store-faults";
import { call, newUser, newWorkspace } from "../support/api";
import { expectEnvelope } from "./_helpers";
import { deletedBeforeUpdate } from "../support/races";

/**
 * Make a new workspace look like one created before search snapshots: no snapshot head (a workspace created now gets
 * an empty, built one: core/insight/search-index.ts `startEmptySnapshot`).
 */
const asOlderThanSnapshots = (workspaceId: string) =>
  dynamoClient().send(new DeleteCommand({ TableName: Config.tableName(), Key: headKey(workspaceId) }));

type Token = string;
let ws: { token: Token; workspaceId: string };
const search = (query: string, extra: Record<string, unknown> = {}) =>
  call("POST", "/api/insights/search", { token: ws.token, body: { workspace_id: ws.workspaceId, query, ...extra } });
const create = async (title: string, description: string) => {
  const res = await call("POST", "/api/insights", { token: ws.token, body: { workspace_id: ws.workspaceId, insight_type: "pain_point", title, description } });
  expect(res.status, res.text).toBe(201);
  return res.body.id as string;
};
const found = (res: { body: { insights: { id: string }[] } }) => res.body.insights.map((i) => i.id);

beforeAll(async () => {
  const { owner, workspace } = await newWorkspace("Search index");
  ws = { token: owner.token, workspaceId: workspace.id };
}, 60_000);

afterEach(() => vi.restoreAllMocks());

/** The BatchGetItem calls a request makes through the handlers' client: their keys' sort keys and projection. */
const batchGets = async (fn: () => Promise<unknown>) => {
  const seen: { sks: string[]; consistent: boolean; projection?: string }[] = [];
    const other: string[] = [];
    const stack = dynamoClient().middlewareStack;
    stack.add(
      (next, context) => async (args) => {
        // The low-level command's name; its key attributes plain or marshalled ({ S }) depending on the step.
        type Sk = { sk: string | { S?: string } };
        const skOf = (k: Sk | undefined) => (k === undefined ? "" : typeof k.sk === "string" ? k.sk : (k.sk.S ?? "?"));
        const input = args.input as { RequestItems?: Record<string, { Keys: Sk[]; ConsistentRead?: boolean; ProjectionExpression?: string; ExpressionAttributeNames?: Record<string, string> }>; Key?: Sk };
        const req = input.RequestItems?.[Config.tableName()];
        if (context.commandName === "BatchGetItemCommand" && req) {
          const names = req.ExpressionAttributeNames ?? {};
          seen.push({ sks: req.Keys.map(skOf), consistent: req.ConsistentRead === true, projection: req.ProjectionExpression?.replace(/#\w+/g, (n) => names[n] ?? n) });
        } else other.push(`${context.commandName} ${skOf(input.Key)}`);
        return next(args);
      },
      { step: "initialize", name: "testCallRecorder" },
    );
    try {
      return { result: await fn(), seen, other };
    } finally {
      stack.remove("testCallRecorder");
    }
};

describe("insight search over the workspace's search snapshot", () => {
  it("writes the search vector with the insight, and embeds only the query on a search, cold or warm", async () => {
    const ids = [
      await create("Users cannot sign in after the update", "The login screen loops back to the start."),
      await create("Exports to CSV are missing", "Managers copy numbers into spreadsheets by hand."),
      await create("The app is too bright at night", "People ask for a dark theme."),
    ];
    const { data } = await db().entities.insight.get(ids.map((id) => ({ workspace_id: ws.workspaceId, id }))).go();
    const emb = await embedder();
    for (const item of data) expect(item).toMatchObject({ search_embedder_id: emb.id, search_vector: expect.any(String), search_scale: expect.any(Number) });

    const spy = vi.spyOn(emb, "embed"); // the real embedder still runs: this only counts its calls
    clearSearchCache(); // a container that has not searched this workspace yet
    const cold = await search("login problems");
    expect(cold.status, cold.text).toBe(200);
    expect(cold.body).toMatchObject({ mode: "semantic", query: "login problems" });
    expect(found(cold)[0]).toBe(ids[0]);
    const warm = await search("spreadsheet export");
    expect(found(warm)[0]).toBe(ids[1]);
    expect(spy.mock.calls).toEqual([[["login problems"]], [["spreadsheet export"]]]);
  });

  it("never returns a deleted insight and never misses a new one, in a container that holds the workspace", async () => {
    const gone = await create("Push notifications arrive twice", "Every reminder is sent two times.");
    const before = await search("duplicate notifications");
    expect(found(before)).toContain(gone);
    const total = before.body.total as number;
    expect((await call("DELETE", `/api/insights/${gone}`, { token: ws.token })).status).toBe(204);
    const after = await search("duplicate notifications");
    expect(found(after)).not.toContain(gone);
    expect(after.body.total).toBe(total - 1);
    const fresh = await create("Notifications come in pairs", "Each alert shows up twice on the phone.");
    expect(found(await search("duplicate notifications"))).toContain(fresh);
    // Archiving changes nothing search ranks on: the result shows it, read from the insight itself.
    await call("POST", "/api/insights/batch", { token: ws.token, body: { workspace_id: ws.workspaceId, insight_ids: [fresh], action: "archive" } });
    expect((await search("duplicate notifications")).body.insights.find((i: { id: string }) => i.id === fresh)).toMatchObject({ is_archived: true });
  });

  it("a change whose shard write lands after a delete of the same insight does not bring its row back", async () => {
    const id = await create("Zebra checkout freezes", "The zebra checkout screen freezes on the last step.");
    expect(found(await search("zebra checkout"))).toContain(id);
    const name = "deleteBeforeShardRead";
    let deleted = false;
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        const values = (args.input as { ExpressionAttributeValues?: Record<string, unknown> }).ExpressionAttributeValues;
        if (!deleted && /^Query/.test(context.commandName ?? "") && String(values?.[":sk"] ?? "").startsWith("searchix#s#")) {
          deleted = true;
          // A DELETE of the insight runs to its end while the PATCH's change reads the shard it will rewrite.
          expect((await call("DELETE", `/api/insights/${id}`, { token: ws.token })).status).toBe(204);
        }
        return next(args);
      },
      { step: "initialize", name },
    );
    let patched;
    try {
      patched = await call("PATCH", `/api/insights/${id}`, { token: ws.token, body: { severity: "high" } });
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
    expect(deleted).toBe(true);
    expect(patched.status, patched.text).toBe(200);
    expectEnvelope(await call("GET", `/api/insights/${id}`, { token: ws.token }), 404, "NOT_FOUND");
    expect(found(await search("zebra checkout"))).not.toContain(id);
    expect((await loadSnapshot(ws.workspaceId)).rows.map((r) => r.id)).not.toContain(id);
  });

  it("a PATCH or archive racing a DELETE of the same item is 404 or leaves it out, never a 500 (insights, recommendations)", async () => {
    const racing = deletedBeforeUpdate;
    const a = await create("Raced patch", "Deleted while patched.");
    expectEnvelope(await racing(`insight#${a}`, () => call("DELETE", `/api/insights/${a}`, { token: ws.token }), () => call("PATCH", `/api/insights/${a}`, { token: ws.token, body: { notes: "late" } })), 404, "NOT_FOUND");
    const [b, c] = [await create("Raced archive one", "x"), await create("Raced archive two", "y")];
    const archived = await racing(`insight#${b}`, () => call("DELETE", `/api/insights/${b}`, { token: ws.token }), () =>
      call("POST", "/api/insights/batch", { token: ws.token, body: { workspace_id: ws.workspaceId, insight_ids: [b, c], action: "archive" } }),
    );
    expect(archived.status, archived.text).toBe(200);
    expect(archived.body).toEqual({ updated_count: 1, insight_ids: [c] });
    const rec = await call("POST", "/api/recommendations", { token: ws.token, body: { workspace_id: ws.workspaceId, title: "Raced recommendation", description: "D" } });
    expect(rec.status, rec.text).toBe(201);
    expectEnvelope(
      await racing(`recommendation#${rec.body.id}`, () => call("DELETE", `/api/recommendations/${rec.body.id}`, { token: ws.token }), () => call("PATCH", `/api/recommendations/${rec.body.id}`, { token: ws.token, body: { title: "Late" } })),
      404,
      "NOT_FOUND",
    );
  });

  it("two text edits at once: the one whose text changed under it is 409, so the search vector is always of the stored text", async () => {
    const { searchText, searchVectorFields } = await import("../../core/insight/search-index");
    const id = await create("Invoices are wrong", "Totals are off.");
    const name = "secondEditFirst";
    let fired = false;
    let second: Awaited<ReturnType<typeof call>> | undefined;
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        if (!fired && /^Update/.test(context.commandName ?? "") && JSON.stringify(args.input).includes("Billing totals are wrong")) {
          fired = true;
          // The title edit's write is about to go: the description edit runs to its end first.
          second = await call("PATCH", `/api/insights/${id}`, { token: ws.token, body: { description: "Billing totals double count taxes on invoices" } });
        }
        return next(args);
      },
      { step: "initialize", name },
    );
    let first;
    try {
      first = await call("PATCH", `/api/insights/${id}`, { token: ws.token, body: { title: "Billing totals are wrong" } });
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
    expect(second?.status, second?.text).toBe(200);
    expectEnvelope(first, 409, "CONFLICT");
    const stored = async () => (await db().entities.insight.get({ workspace_id: ws.workspaceId, id }).go({ consistent: true })).data!;
    const vectorOf = async (t: { title: string; description: string }) => (await searchVectorFields([searchText(t)], embedder))[0]!.search_vector;
    const now = await stored();
    expect(now).toMatchObject({ title: "Invoices are wrong", description: "Billing totals double count taxes on invoices" });
    expect(now.search_vector).toBe(await vectorOf(now));
    // Its retry, on the text as it is now, goes through, with the vector of the text it leaves.
    expect((await call("PATCH", `/api/insights/${id}`, { token: ws.token, body: { title: "Billing totals are wrong" } })).status).toBe(200);
    const after = await stored();
    expect(after.search_vector).toBe(await vectorOf({ title: "Billing totals are wrong", description: "Billing totals double count taxes on invoices" }));
  });

  it("a write whose snapshot bookkeeping fails afterwards is still answered as done (the change stays pending for a reader to repair)", async () => {
    // A workspace of its own: the change it leaves pending would show in the shared workspace's later tests.
    const { owner, workspace } = await newWorkspace("Bookkeeping fails");
    const name = "headBumpFails";
    let failed = false;
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { UpdateExpression?: string; Key?: { sk?: unknown } };
        if (!failed && /^Update/.test(context.commandName ?? "") && input.Key?.sk === "searchix#head" && /ADD version/.test(input.UpdateExpression ?? "")) {
          failed = true;
          throw Object.assign(new Error("connection reset"), { name: "NetworkingError" });
        }
        return next(args);
      },
      { step: "initialize", name },
    );
    let res;
    try {
      res = await call("POST", "/api/insights", { token: owner.token, body: { workspace_id: workspace.id, insight_type: "pain_point", title: "Receipts never arrive by e-mail", description: "No receipt after paying." } });
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
    expect(failed).toBe(true);
    expect(res.status, res.text).toBe(201);
    expect((await call("GET", `/api/insights/${res.body.id}`, { token: owner.token })).status).toBe(200);
    expect((await readHead(workspace.id)).pending.map((p) => p.id)).toContain(res.body.id);
  });

  it("applies a change whose writer died once it is stale: the next search finds the insight", async () => {
    const id = randomUUID();
    // What a writer that died after its insight write leaves: the insight, and its change pending for over the bound.
    await dynamoClient().send(new UpdateCommand({
      TableName: Config.tableName(), Key: { pk: `ws#${ws.workspaceId}`, sk: "searchix#head" },
      UpdateExpression: "ADD pending :p", ExpressionAttributeValues: { ":p": new Set([`${id}@${Date.now() - STALE_PENDING_MS - 1}`]) },
    }));
    await db().entities.insight.create({ id, workspace_id: ws.workspaceId, insight_type: "pain_point", title: "Orphaned by a crash: kiosk mode", description: "Written, never applied." }).go();
    const res = await search("kiosk mode");
    expect(found(res)).toContain(id);
    expect((await readHead(ws.workspaceId)).pending).toEqual([]);
  });

  it("stores the lexical index the first container built, so the next container loads it and ranks the same", async () => {
    const { owner, workspace } = await newWorkspace("Lexical index stored");
    await asOlderThanSnapshots(workspace.id); // its insights below are put directly, as an older workspace's were
    const items = Array.from({ length: 320 }, (_, k) => ({
      id: randomUUID(), workspace_id: workspace.id, insight_type: "feedback_theme",
      title: k % 40 === 0 ? `Offline mode is missing (${k})` : `Survey answer number ${k}`, description: `Respondent ${k} wrote about topic ${k % 17}.`,
    }));
    await db().entities.insight.put(items).go();
    const ask = () => call("POST", "/api/insights/search", { token: owner.token, body: { workspace_id: workspace.id, query: "offline mode", limit: 20 } });
    clearSearchCache();
    const first = await ask();
    expect(first.status, first.text).toBe(200);
    expect(first.body.total).toBe(8);
    const head = await readHead(workspace.id);
    expect((await loadSnapshot(workspace.id)).lexical).toMatchObject({ version: head.version });
    clearSearchCache(); // another container: it loads the stored index
    const second = await ask();
    expect(found(second)).toEqual(found(first));
  });

  it("a lexical index that cannot be stored (DynamoDB refuses the write: past 4 MB, a throttle) still answers the search", async () => {
    const { owner, workspace } = await newWorkspace("Lexical index refused");
    await asOlderThanSnapshots(workspace.id);
    const items = Array.from({ length: 320 }, (_, k) => ({
      id: randomUUID(), workspace_id: workspace.id, insight_type: "feedback_theme",
      title: k % 40 === 0 ? `Offline mode is missing (${k})` : `Survey answer number ${k}`, description: `Respondent ${k} wrote about topic ${k % 17}.`,
    }));
    await db().entities.insight.put(items).go();
    // What DynamoDB answers a transaction over 4 MB (DynamoDB Local does not enforce the limit).
    const fault = storeFails(/^(Put|TransactWrite)/, "searchix#lex#", 1, () => Object.assign(new Error("Transaction request cannot be larger than 4 MB"), { name: "ValidationException" }));
    clearSearchCache();
    let res;
    try {
      res = await call("POST", "/api/insights/search", { token: owner.token, body: { workspace_id: workspace.id, query: "offline mode", limit: 20 } });
    } finally {
      fault.remove();
    }
    expect(fault.failed()).toBe(1);
    expect(res.status, res.text).toBe(200);
    expect(res.body.total).toBe(8);
    expect((await loadSnapshot(workspace.id)).lexical).toBeNull();
  });

  it("does not store a lexical index past LEXICAL_MAX_BYTES deflated (one transaction could not hold it)", async () => {
    const ws = randomUUID();
    const big = JSON.stringify({ v: 1, text: randomBytes(LEXICAL_MAX_BYTES).toString("base64") });
    expect(await saveLexical(ws, 1, big, 0)).toBe(false);
    expect((await loadSnapshot(ws)).lexical).toBeNull();
    expect(await saveLexical(ws, 1, '{"v":1}', 0)).toBe(true);
  });

  it("builds the snapshot of a workspace whose insights predate it on its first search, embedding nothing but the query", async () => {
    const { owner, workspace } = await newWorkspace("Older than the snapshot");
    await asOlderThanSnapshots(workspace.id);
    const old = [randomUUID(), randomUUID()];
    await db().entities.insight.put([
      { id: old[0]!, workspace_id: workspace.id, insight_type: "pain_point", title: "Kernel restarts lose work", description: "The notebook forgets its state." },
      { id: old[1]!, workspace_id: workspace.id, insight_type: "pain_point", title: "Sharing notebooks is hard", description: "Colleagues cannot open them." },
    ]).go();
    expect((await readHead(workspace.id)).built).toBe(false);
    const spy = vi.spyOn(await embedder(), "embed");
    const res = await call("POST", "/api/insights/search", { token: owner.token, body: { workspace_id: workspace.id, query: "kernel" } });
    expect(res.status, res.text).toBe(200);
    // No stored search vector: the spec's text fallback ranks them, and they are not embedded on this read.
    expect(res.body).toMatchObject({ mode: "text", total: 1 });
    expect(found(res)).toEqual([old[0]]);
    expect(spy.mock.calls).toEqual([[["kernel"]]]);
    expect((await readHead(workspace.id)).built).toBe(true);
    // The next write of the workspace (a write path) embeds them on the side: search turns semantic.
    await call("POST", "/api/insights", { token: owner.token, body: { workspace_id: workspace.id, insight_type: "behavior", title: "Teams share notebooks by e-mail", description: "Files go back and forth." } });
    const after = await call("POST", "/api/insights/search", { token: owner.token, body: { workspace_id: workspace.id, query: "passing notebooks to colleagues" } });
    expect(after.body.mode).toBe("semantic");
    const { data } = await db().entities.insight.get(old.map((id) => ({ workspace_id: workspace.id, id }))).go();
    expect(data.every((i) => typeof i.search_vector === "string")).toBe(true);
  });

  it("a write path's backfill stores the vector of an older insight whose description is longer than a row keeps (8,000 characters)", async () => {
    const { owner, workspace } = await newWorkspace("Long descriptions, older than the snapshot");
    await asOlderThanSnapshots(workspace.id);
    const id = randomUUID();
    const description = `Kernel restarts lose work. ${"The notebook forgets every variable after a restart. ".repeat(180)}`.slice(0, 9_500);
    await db().entities.insight.put({ id, workspace_id: workspace.id, insight_type: "pain_point", title: "Kernel restarts", description }).go();
    expect((await call("POST", "/api/insights/search", { token: owner.token, body: { workspace_id: workspace.id, query: "kernel" } })).status).toBe(200);
    const unembedded = async () => (await dynamoClient().send(new GetCommand({ TableName: Config.tableName(), Key: headKey(workspace.id), ConsistentRead: true }))).Item?.unembedded;
    expect(await unembedded()).toBe(1);
    // A write of the workspace backfills it: the whole text is embedded, and the vector lands on the insight.
    const spy = vi.spyOn(await embedder(), "embed");
    await call("POST", "/api/insights", { token: owner.token, body: { workspace_id: workspace.id, insight_type: "behavior", title: "Teams share notebooks", description: "By e-mail." } });
    expect(spy.mock.calls.flatMap(([texts]) => texts)).toContain(`Kernel restarts. ${description}`);
    spy.mockRestore();
    const { data } = await db().entities.insight.get({ workspace_id: workspace.id, id }).go({ consistent: true });
    expect(typeof data?.search_vector).toBe("string");
    expect(await unembedded()).toBe(0);
  });

  it("checks membership with the snapshot head in one BatchGetItem and answers from the rows; a non-member gets 403 and reads nothing", async () => {
    const reminders = await create("Reminders arrive after the appointment", "Patients get the text message a day late.");
    const member = await batchGets(() => search("appointment reminders"));
    const me = (await call("GET", "/api/auth/me", { token: ws.token })).body.id as string;
    // One BatchGet: the membership with the head. The results come from the snapshot's rows, no insight is read.
    expect(member.seen).toEqual([{ sks: [`member#${me}`, "searchix#head"], consistent: true, projection: undefined }]);
    expect(member.other.filter((c) => c.includes("member#") || c.includes("searchix#") || c.includes("insight#"))).toEqual([]);
    const res = member.result as Awaited<ReturnType<typeof search>>;
    expect(res.status, res.text).toBe(200);
    expect(found(res)[0]).toBe(reminders);
    // The result is the insight as GET /api/insights/{id} shows it, with its score.
    const { score, ...shown } = res.body.insights[0] as { score: number };
    expect(score).toBeGreaterThan(0);
    expect(shown).toEqual((await call("GET", `/api/insights/${reminders}`, { token: ws.token })).body);

    const outsider = await newUser();
    const denied = await batchGets(() => call("POST", "/api/insights/search", { token: outsider.token, body: { workspace_id: ws.workspaceId, query: "appointment reminders" } }));
    expectEnvelope(denied.result as Awaited<ReturnType<typeof search>>, 403, "FORBIDDEN");
    expect(denied.seen).toEqual([{ sks: [`member#${outsider.id}`, "searchix#head"], consistent: true, projection: undefined }]);

    // Inside a request that has checked the membership already (the copilot's tools), only the head is read.
    const inScope = await batchGets(() =>
      withRequestScope(async () => {
        await requireMember(me, ws.workspaceId);
        return searchInsights(me, { workspace_id: ws.workspaceId, query: "appointment reminders", limit: 10 });
      }),
    );
    // The membership once (requireMember), then the head alone by a GetItem; nothing else.
    expect(inScope.other.filter((c) => c.includes("member#") || c.includes("searchix#"))).toEqual([`GetItemCommand member#${me}`, "GetItemCommand searchix#head"]);
    expect(inScope.seen).toEqual([]);
    expect((inScope.result as { insights: { id: string }[] }).insights.map((i) => i.id)).toEqual(found(res));
  });

  it("shows every change in its results at once: rating, notes, archive, new text", async () => {
    const id = await create("Calendar sync drops recurring events", "Weekly meetings vanish after a sync.");
    const shown = async () => (await search("recurring calendar events")).body.insights.find((i: { id: string }) => i.id === id);
    expect(await shown()).toMatchObject({ rating: null, notes: null, is_archived: false });
    expect((await call("PATCH", `/api/insights/${id}`, { token: ws.token, body: { rating: 4, notes: "Seen in three interviews" } })).status).toBe(200);
    expect(await shown()).toMatchObject({ rating: 4, notes: "Seen in three interviews" });
    expect((await call("POST", "/api/insights/batch", { token: ws.token, body: { workspace_id: ws.workspaceId, insight_ids: [id], action: "archive" } })).status).toBe(200);
    expect(await shown()).toMatchObject({ is_archived: true, rating: 4 });
    expect((await call("PATCH", `/api/insights/${id}`, { token: ws.token, body: { title: "Recurring calendar events disappear" } })).status).toBe(200);
    const after = await shown();
    expect(after).toMatchObject({ title: "Recurring calendar events disappear", is_archived: true });
    expect(after.updated_at).toBe((await call("GET", `/api/insights/${id}`, { token: ws.token })).body.updated_at);
  });

  it("reads an insight whose change is under way from the table, not from its row", async () => {
    const id = await create("Dark mode resets on restart", "The theme goes back to light.");
    expect(found(await search("dark mode theme"))).toContain(id); // this container holds the workspace now
    // A change under way (begun, written, not yet applied): the pending entry and the insight's new text.
    await dynamoClient().send(new UpdateCommand({
      TableName: Config.tableName(), Key: headKey(ws.workspaceId),
      UpdateExpression: "ADD pending :p", ExpressionAttributeValues: { ":p": new Set([`${id}@${Date.now()}`]) },
    }));
    await db().entities.insight.patch({ workspace_id: ws.workspaceId, id }).set({ description: "The theme goes back to light after every restart." }).go();
    const under = await batchGets(() => search("dark mode theme"));
    const res = under.result as Awaited<ReturnType<typeof search>>;
    expect(res.body.insights.find((i: { id: string }) => i.id === id)).toMatchObject({ description: "The theme goes back to light after every restart." });
    // The head with the membership, then that insight alone, with the shown attributes only.
    expect(under.seen).toHaveLength(2);
    expect(under.seen[1]).toMatchObject({ sks: [`insight#${id}`], consistent: true });
    expect(under.seen[1]!.projection).not.toContain("vector");
    await dynamoClient().send(new UpdateCommand({
      TableName: Config.tableName(), Key: headKey(ws.workspaceId),
      UpdateExpression: "DELETE pending :p", ExpressionAttributeValues: { ":p": new Set((await readHead(ws.workspaceId)).pending.map((p) => p.entry)) },
    }));
  });

  it("rewrites rows stored before rows carried their view on the first search that loads them", async () => {
    const { owner, workspace } = await newWorkspace("Rows of an older format");
    const ask = () => call("POST", "/api/insights/search", { token: owner.token, body: { workspace_id: workspace.id, query: "onboarding checklist" } });
    const made = await call("POST", "/api/insights", { token: owner.token, body: { workspace_id: workspace.id, insight_type: "pain_point", title: "The onboarding checklist is hidden", description: "New users never find it.", impact: "Slower activation" } });
    expect(made.status, made.text).toBe(201);
    // Strip the views from every stored shard page, as a deployment before views wrote them (rev unchanged).
    const { Items = [] } = await dynamoClient().send(new QueryCommand({
      TableName: Config.tableName(), KeyConditionExpression: "pk = :pk AND begins_with(sk, :s)", ExpressionAttributeValues: { ":pk": `ws#${workspace.id}`, ":s": "searchix#s#" },
    }));
    expect(Items.length).toBeGreaterThan(0);
    for (const item of Items) {
      const rows = decodeShard(item.blob as Uint8Array);
      expect(rows.every((r) => r.view !== null)).toBe(true);
      await dynamoClient().send(new PutCommand({ TableName: Config.tableName(), Item: { ...item, blob: encodeShard(rows.map((r) => ({ ...r, view: null }))) } }));
    }
    const version = (await readHead(workspace.id)).version;
    clearSearchCache();
    const res = await ask();
    expect(res.status, res.text).toBe(200);
    expect(res.body.insights[0]).toMatchObject({ id: made.body.id, impact: "Slower activation", quotes: [], source_ids: [] });
    expect((await loadSnapshot(workspace.id)).rows.every((r) => r.view !== null)).toBe(true);
    expect((await readHead(workspace.id)).version).toBe(version + 1);
  });

  it("does not embed a repeated query again in the same container (the vector of a text never changes)", async () => {
    const spy = vi.spyOn(await embedder(), "embed");
    const first = await search("notifications sent twice");
    const again = await search("notifications sent twice");
    expect(found(again)).toEqual(found(first));
    expect(spy.mock.calls).toEqual([[["notifications sent twice"]]]);
  });
});

describe("snapshotInsights: every insight of a workspace from its snapshot (the copilot harness's pre-flight)", () => {
  it("is every insight as GET /api/insights/{id} shows it, and follows creates, deletes and changes under way", async () => {
    const { owner, workspace } = await newWorkspace("Harness snapshot");
    const token = owner.token;
    const make = async (title: string, description: string) => {
      const res = await call("POST", "/api/insights", { token, body: { workspace_id: workspace.id, insight_type: "pain_point", title, description } });
      expect(res.status, res.text).toBe(201);
      return res.body.id as string;
    };
    const byId = async () => new Map((await snapshotInsights(workspace.id)).map((v) => [v.id, v]));
    const a = await make("Export to CSV garbles accents", "Names with accents come out as question marks.");
    const b = await make("Reminders arrive twice", "Every reminder shows up two times on the lock screen.");
    let views = await byId();
    expect([...views.keys()].sort()).toEqual([a, b].sort());
    expect(views.get(a)).toEqual((await call("GET", `/api/insights/${a}`, { token })).body);

    // This container holds the workspace now: a create and a delete through the API show at once.
    const c = await make("Search ignores archived notes", "Old notes never come up.");
    expect((await call("DELETE", `/api/insights/${b}`, { token })).status).toBe(204);
    views = await byId();
    expect([...views.keys()].sort()).toEqual([a, c].sort());

    // A change under way (begun, written, not yet applied): the insight is read from the table, with its new text.
    await dynamoClient().send(new UpdateCommand({
      TableName: Config.tableName(), Key: headKey(workspace.id),
      UpdateExpression: "ADD pending :p", ExpressionAttributeValues: { ":p": new Set([`${a}@${Date.now()}`]) },
    }));
    await db().entities.insight.patch({ workspace_id: workspace.id, id: a }).set({ description: "Names with accents come out as question marks in Excel." }).go();
    views = await byId();
    expect(views.get(a)).toMatchObject({ description: "Names with accents come out as question marks in Excel." });
    expect(views.get(c)).toEqual((await call("GET", `/api/insights/${c}`, { token })).body);
    await dynamoClient().send(new UpdateCommand({
      TableName: Config.tableName(), Key: headKey(workspace.id),
      UpdateExpression: "DELETE pending :p", ExpressionAttributeValues: { ":p": new Set((await readHead(workspace.id)).pending.map((p) => p.entry)) },
    }));
  });
});

describe("a request reads the search head once for its pre-flight and its first search", () => {
  it("reuses the head its pre-flight read for a search moments later, and reads it again after HEAD_REUSE_MS", async () => {
    const { owner, workspace } = await newWorkspace("Head reuse");
    const res = await call("POST", "/api/insights", { token: owner.token, body: { workspace_id: workspace.id, insight_type: "pain_point", title: "Login takes forever", description: "Signing in on the phone takes a minute." } });
    expect(res.status, res.text).toBe(201);
    const key = headKey(workspace.id);
    // Every command of the handlers' client that names the head's key (a GetItem, or a BatchGetItem beside the membership).
    const headReads: string[] = [];
    const name = "headReuseTestCounter";
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        if (JSON.stringify(args.input).includes(key.sk) && JSON.stringify(args.input).includes(key.pk)) headReads.push(String(context.commandName));
        return next(args);
      },
      { step: "initialize", name },
    );
    try {
      const query = { workspace_id: workspace.id, query: "login", limit: 5 };
      await withRequestScope(async () => {
        await requireMember(owner.id, workspace.id);
        await snapshotInsights(workspace.id); // the pre-flight
        expect(headReads).toHaveLength(1);
        expect((await searchInsights(owner.id, query)).insights.map((i) => i.id)).toEqual([res.body.id]);
        expect(headReads).toHaveLength(1); // the first search read no head
        const now = Date.now();
        vi.spyOn(Date, "now").mockReturnValue(now + HEAD_REUSE_MS + 1);
        expect((await searchInsights(owner.id, query)).insights.map((i) => i.id)).toEqual([res.body.id]);
        expect(headReads).toHaveLength(2); // too old: read again
      });
      // Read ahead with the membership (the copilot's stream): the pre-flight and the first search read no head, and
      // the window counts from that read, not from the pre-flight that used it.
      vi.restoreAllMocks();
      await withRequestScope(async () => {
        const before = Date.now();
        await requireMemberWithWorkspace(owner.id, workspace.id, { prefetch: [prefetchSearchHead(workspace.id)] });
        const after = Date.now();
        headReads.length = 0; // the BatchGet that read the head beside the membership
        vi.spyOn(Date, "now").mockReturnValue(before + HEAD_REUSE_MS);
        expect((await snapshotInsights(workspace.id)).map((i) => i.id)).toEqual([res.body.id]);
        expect((await searchInsights(owner.id, query)).insights.map((i) => i.id)).toEqual([res.body.id]);
        expect(headReads).toHaveLength(0);
        vi.spyOn(Date, "now").mockReturnValue(after + HEAD_REUSE_MS + 1);
        await searchInsights(owner.id, query);
        expect(headReads).toHaveLength(1);
      });
      // Outside a request scope nothing is kept: every search reads the head.
      vi.restoreAllMocks();
      headReads.length = 0;
      await snapshotInsights(workspace.id);
      await searchInsights(owner.id, { workspace_id: workspace.id, query: "login", limit: 5 });
      expect(headReads).toHaveLength(2);
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
  });
});
describe("a request that changes an insight reads the head again (a stream variant's operation writes before the agent searches)", () => {
  it("finds an insight the same request created moments after its pre-flight kept the head", async () => {
    const { owner, workspace } = await newWorkspace("Head after a write");
    const before = await call("POST", "/api/insights", { token: owner.token, body: { workspace_id: workspace.id, insight_type: "pain_point", title: "Login takes forever", description: "Signing in on the phone takes a minute." } });
    expect(before.status, before.text).toBe(201);
    const query = { workspace_id: workspace.id, query: "export", limit: 5 };
    try {
      await withRequestScope(async () => {
        // The clock stands still at the read ahead: the kept head never expires here, so only the write can drop it.
        const now = Date.now();
        vi.spyOn(Date, "now").mockReturnValue(now);
        await requireMemberWithWorkspace(owner.id, workspace.id, { prefetch: [prefetchSearchHead(workspace.id)] });
        expect((await snapshotInsights(workspace.id)).map((i) => i.id)).toEqual([before.body.id]); // the pre-flight
        expect(requestScope()!.recent.has(keptHeadKey(workspace.id))).toBe(true);
        // The operation of a stream variant (synthesis, say) writes insights in the same request.
        const made = await createInsight(owner.id, CreateInsightInput.parse({ workspace_id: workspace.id, insight_type: "pain_point", title: "Export to CSV is missing", description: "Teams cannot export their reports to a spreadsheet." }));
        expect(requestScope()!.recent.has(keptHeadKey(workspace.id))).toBe(false);
        expect((await searchInsights(owner.id, query)).insights.map((i) => i.id)).toContain(made.id);
        expect((await snapshotInsights(workspace.id)).map((i) => i.id).sort()).toEqual([before.body.id, made.id].sort());
      });
    } finally {
      vi.restoreAllMocks();
    }
  });

  it("a read of the same request that ran beside the change (before the version moved) does not hide the change afterwards", async () => {
    const { owner, workspace } = await newWorkspace("Read beside a write");
    const before = await call("POST", "/api/insights", { token: owner.token, body: { workspace_id: workspace.id, insight_type: "pain_point", title: "Login takes forever", description: "Signing in on the phone takes a minute." } });
    expect(before.status, before.text).toBe(201);
    const query = { workspace_id: workspace.id, query: "export", limit: 5 };
    // The pre-flight's read lands while the change is being applied: just before the head's version moves.
    let beside = false;
    const name = "readBesideChange";
    dynamoClient().middlewareStack.add(
      (next) => async (args) => {
        if (beside && ((args.input as { UpdateExpression?: string }).UpdateExpression ?? "").startsWith("ADD version")) {
          beside = false;
          await snapshotInsights(workspace.id);
        }
        return next(args);
      },
      { step: "initialize", name },
    );
    try {
      await withRequestScope(async () => {
        vi.spyOn(Date, "now").mockReturnValue(Date.now()); // the kept head never expires here
        await requireMemberWithWorkspace(owner.id, workspace.id, { prefetch: [prefetchSearchHead(workspace.id)] });
        expect((await snapshotInsights(workspace.id)).map((i) => i.id)).toEqual([before.body.id]); // the pre-flight
        beside = true;
        const made = await createInsight(owner.id, CreateInsightInput.parse({ workspace_id: workspace.id, insight_type: "pain_point", title: "Export to CSV is missing", description: "Teams cannot export their reports to a spreadsheet." }));
        expect(beside).toBe(false); // the read ran
        expect((await searchInsights(owner.id, query)).insights.map((i) => i.id)).toContain(made.id);
        expect((await snapshotInsights(workspace.id)).map((i) => i.id).sort()).toEqual([before.body.id, made.id].sort());
        beside = true;
        await removeInsight(owner.id, made.id);
        expect(beside).toBe(false);
        expect((await searchInsights(owner.id, query)).insights.map((i) => i.id)).not.toContain(made.id);
        expect((await snapshotInsights(workspace.id)).map((i) => i.id)).toEqual([before.body.id]);
      });
    } finally {
      dynamoClient().middlewareStack.remove(name);
      vi.restoreAllMocks();
    }
  });

  it("a request searching as of an older kept head does not replace the container's newer snapshot", async () => {
    const { owner, workspace } = await newWorkspace("Older kept head");
    const post = (title: string) => call("POST", "/api/insights", { token: owner.token, body: { workspace_id: workspace.id, insight_type: "pain_point", title, description: `${title}, users say.` } });
    expect((await post("Login takes forever")).status).toBe(201);
    const searchNow = () => call("POST", "/api/insights/search", { token: owner.token, body: { workspace_id: workspace.id, query: "login", limit: 5 } });
    // Loads of the snapshot's pages (a Query of the workspace's searchix# range) through the handlers' client.
    let loads = 0;
    const name = "snapshotLoadCounter";
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === "QueryCommand" && JSON.stringify(args.input).includes("searchix#")) loads++;
        return next(args);
      },
      { step: "initialize", name },
    );
    try {
      let resume!: () => void;
      const paused = new Promise<void>((r) => (resume = r));
      let kept!: () => void;
      const headKept = new Promise<void>((r) => (kept = r));
      // A stream read the head beside its membership, then waits (its model, say) while the workspace changes.
      const older = withRequestScope(async () => {
        await requireMemberWithWorkspace(owner.id, workspace.id, { prefetch: [prefetchSearchHead(workspace.id)] });
        kept();
        await paused;
        return (await snapshotInsights(workspace.id)).length;
      });
      await headKept;
      expect((await post("Export to CSV is missing")).status).toBe(201);
      expect((await searchNow()).status).toBe(200); // this container now holds the newer snapshot
      resume();
      expect(await older).toBeGreaterThanOrEqual(1);
      loads = 0;
      expect((await searchNow()).status).toBe(200);
      expect(loads).toBe(0); // still the newer snapshot: nothing loaded again
    } finally {
      dynamoClient().middlewareStack.remove(name);
      vi.restoreAllMocks();
    }
  });

  it("a head kept by a member's read does not let another user of the same scope search without the membership check (403)", async () => {
    const { owner, workspace } = await newWorkspace("Kept head, other caller");
    const outsider = await newUser();
    await withRequestScope(async () => {
      await requireMemberWithWorkspace(owner.id, workspace.id, { prefetch: [prefetchSearchHead(workspace.id)] });
      await snapshotInsights(workspace.id);
      expect(requestScope()!.recent.has(keptHeadKey(workspace.id))).toBe(true);
      await expect(searchInsights(outsider.id, { workspace_id: workspace.id, query: "login", limit: 5 })).rejects.toMatchObject({ code: "FORBIDDEN" });
    });
  });
});

describe("a shard stored in several pages is used only when every page is of one write", () => {
  /**
   * A workspace with one insight and, in its shard, a second row (no insight behind it: nothing rewrites it) whose
   * codes sit at the end of the blob; and that shard as two writes would store it, cut in two pages inside those codes
   * (a shard past 350 KB, in miniature: the readers go by the page count on page 0). The two writes' blobs differ only
   * in those codes, so page 0 of one with page 1 of the other decodes without error into wrong codes.
   */
  async function twoWrites() {
    const { owner, workspace } = await newWorkspace("Paged shard");
    const made = await call("POST", "/api/insights", { token: owner.token, body: { workspace_id: workspace.id, insight_type: "pain_point", title: "Invoices are late", description: "Customers wait weeks." } });
    expect(made.status, made.text).toBe(201);
    const shard = shardOf(made.body.id);
    const prefix = `searchix#s#${String(shard).padStart(2, "0")}#`;
    const { Items = [] } = await dynamoClient().send(new QueryCommand({
      TableName: Config.tableName(), KeyConditionExpression: "pk = :pk AND begins_with(sk, :s)", ExpressionAttributeValues: { ":pk": `ws#${workspace.id}`, ":s": prefix },
    }));
    expect(Items.length).toBe(1);
    const [page0] = Items as Record<string, unknown>[];
    const rows = decodeShard(page0!.blob as Uint8Array);
    // The current embedder's, so a write path's backfill (rows without a current vector) leaves the row's codes be.
    expect(rows[0]!.embedder_id).toEqual(expect.any(String));
    let otherId = randomUUID();
    while (shardOf(otherId) !== shard) otherId = randomUUID();
    const other = (fill: number): SearchRow => ({ ...rows[0]!, id: otherId, title: "Other", embedder_id: rows[0]!.embedder_id, codes: new Int8Array(32).fill(fill), scale: 0.01 });
    const rev = page0!.rev as number;
    const cut = (fill: number) => {
      const blob = encodeShard([...rows, other(fill)]);
      return [blob.subarray(0, blob.length - 16), blob.subarray(blob.length - 16)] as const;
    };
    const [oldHead, oldTail] = cut(1); // the write at rev + 1
    const [newHead, newTail] = cut(-1); // the write at rev + 2
    const put = (Item: Record<string, unknown>) => dynamoClient().send(new PutCommand({ TableName: Config.tableName(), Item: { pk: `ws#${workspace.id}`, ...Item } }));
    return {
      owner, workspace, insightId: made.body.id as string, otherId, shardPrefix: prefix,
      /** Page 0 of the later write beside page 1 of the earlier one, as a Query can read them while the later commits. */
      mixed: () => Promise.all([
        put({ sk: `${prefix}0`, rev: rev + 2, pages: 2, pagerevs: true, blob: newHead }),
        put({ sk: `${prefix}1`, rev: rev + 1, blob: oldTail }),
      ]),
      /** The later write's page 1 landing. */
      landed: () => put({ sk: `${prefix}1`, rev: rev + 2, blob: newTail }),
      /** Both pages of a write stored before pages carried the rev (page 0 unmarked, page 1 without one). */
      legacy: () => Promise.all([put({ sk: `${prefix}0`, rev: rev + 1, pages: 2, blob: oldHead }), put({ sk: `${prefix}1`, blob: oldTail })]),
    };
  }
  const codesOf = async (workspaceId: string, id: string) => [...((await loadSnapshot(workspaceId)).rows.find((r) => r.id === id)?.codes ?? [])];

  it("a reader does not decode page 0 of one write with page 1 of another (it reads again); pages stored before revs on every page still load", async () => {
    const shard = await twoWrites();
    await shard.mixed();
    await expect(loadSnapshot(shard.workspace.id)).rejects.toThrow(/shard rewrite/);
    await shard.landed();
    expect(await codesOf(shard.workspace.id, shard.otherId)).toEqual(new Array(32).fill(-1));
    await shard.legacy();
    expect(await codesOf(shard.workspace.id, shard.otherId)).toEqual(new Array(32).fill(1));
  });

  it("a writer that read the pages of two writes reads again instead of storing their mix under the later rev", async () => {
    const shard = await twoWrites();
    await shard.mixed();
    const name = "shardPage1LandsAfterRead";
    let reads = 0;
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        const values = (args.input as { ExpressionAttributeValues?: Record<string, unknown> }).ExpressionAttributeValues;
        const out = await next(args);
        // The later write's page 1 lands just after the PATCH's change has read the shard it rewrites.
        if (/^Query/.test(context.commandName ?? "") && String(values?.[":sk"] ?? "").startsWith(shard.shardPrefix) && reads++ === 0) await shard.landed();
        return out;
      },
      { step: "initialize", name },
    );
    let res;
    try {
      res = await call("PATCH", `/api/insights/${shard.insightId}`, { token: shard.owner.token, body: { notes: "Seen again" } });
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
    expect(res.status, res.text).toBe(200);
    expect(reads).toBeGreaterThan(1);
    const snapshot = await loadSnapshot(shard.workspace.id);
    expect(snapshot.rows.find((r) => r.id === shard.insightId)?.view?.notes).toBe("Seen again");
    expect(await codesOf(shard.workspace.id, shard.otherId)).toEqual(new Array(32).fill(-1));
  });
});
