/**
 * Reads in one round trip (issue #24 point 2; docs/decisions.md "Reads in one round trip"): a workspace-scoped GET by
 * id costs ONE DynamoDB call once the container knows the caller (core/user's 30 s user cache) and the id's workspace
 * (core/workspace's location map); membership is never remembered across requests, so a removed member is refused
 * on their next request; a suspension made elsewhere takes effect within the user cache's bound, one made in this
 * container at once; 404-vs-403 stays as docs/decisions.md "404 or 403" says. Calls are counted on the handlers' own
 * DynamoDB client, only those made inside the request under test.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { dynamoClient } from "../../core/db/client";
import { db } from "../../core/db/service";
import * as User from "../../core/user";
import { forgetLocations, requireMemberWithWorkspace } from "../../core/workspace";
import { withRequestScope } from "../../core/context";
import type { Prefetch } from "../../core/db/read";
import { prefetchSearchHead } from "../../core/insight/search";
import { forgetCached, headVersion, loadMemory, MEMORY_HEAD_REUSE_MS, prefetchMemoryHead } from "../../core/memory/store";
import { learnFromStatement } from "../../core/memory/learn";
import { forgetAll } from "../../core/memory";
import { call, newUser, newWorkspace, type ApiResponse } from "../support/api";
import { sourceWith } from "../support/sources";
import { expectEnvelope } from "./_helpers";

/** Marks the async context of the request being counted, so background work of earlier requests is not counted. */
const counting = new AsyncLocalStorage<string[]>();
beforeAll(() => {
  dynamoClient().middlewareStack.add(
    (next, context) => async (args) => {
      counting.getStore()?.push(lowLevel(String(context.commandName ?? "?").replace(/Command$/, "")));
      return next(args);
    },
    { step: "initialize", name: "readsTestCallCounter" },
  );
  return () => dynamoClient().middlewareStack.remove("readsTestCallCounter");
});

/** The low-level operation of a command (ElectroDB sends the DocumentClient's Get for GetItem, and so on). */
const lowLevel = (name: string) => (/^(Get|Put|Update|Delete|BatchGet|BatchWrite)$/.test(name) ? `${name}Item` : name);

/** A request through the real handler, with the DynamoDB commands it sent (e.g. ["BatchGetItem"]). */
async function counted(method: string, path: string, token: string): Promise<{ res: ApiResponse; calls: string[] }> {
  const calls: string[] = [];
  const res = await counting.run(calls, () => call(method, path, { token }));
  return { res, calls };
}

/**
 * Have this container read the user afresh (and keep it for USER_CACHE_TTL_MS from then), so a count taken right after
 * does not depend on how long the setup took on a loaded machine.
 * @returns the times just before and just after the read, between which the cache entry was stamped.
 */
async function freshUser(token: string, id: string): Promise<{ before: number; after: number }> {
  User.forget(id);
  const before = Date.now();
  expect((await call("GET", "/api/auth/me", { token })).status).toBe(200);
  return { before, after: Date.now() };
}

const createInsight = async (token: string, workspaceId: string) => {
  const res = await call("POST", "/api/insights", {
    token,
    body: { workspace_id: workspaceId, insight_type: "pain_point", title: `Insight ${randomUUID().slice(0, 6)}`, description: "Something users said" },
  });
  expect(res.status, res.text).toBe(201);
  return res.body.id as string;
};

const addMember = async (ownerToken: string, workspaceId: string, email: string) => {
  const res = await call("POST", `/api/workspaces/${workspaceId}/members`, { token: ownerToken, body: { email, role: "member" } });
  expect(res.status, res.text).toBe(201);
};

afterEach(() => {
  vi.useRealTimers();
});

describe("GET by id: DynamoDB calls per request", () => {
  it("GET /api/insights/{id}: the GSI query + one BatchGet when the id is new to the container, one BatchGet warm", async () => {
    const { owner, workspace } = await newWorkspace("Reads");
    const id = await createInsight(owner.token, workspace.id);
    forgetLocations();
    await freshUser(owner.token, owner.id);

    const cold = await counted("GET", `/api/insights/${id}`, owner.token);
    expect(cold.res.status, cold.res.text).toBe(200);
    expect(cold.res.body).toMatchObject({ id, workspace_id: workspace.id });
    // The user is warm (newWorkspace and the create read it within the bound): the id index, then membership + item.
    expect(cold.calls).toEqual(["Query", "BatchGetItem"]);

    const warm = await counted("GET", `/api/insights/${id}`, owner.token);
    expect(warm.res.status).toBe(200);
    expect(warm.res.body).toEqual(cold.res.body);
    expect(warm.calls).toEqual(["BatchGetItem"]);
  });

  it("GET /api/workspaces/{id}: one BatchGet of membership + workspace", async () => {
    const { owner, workspace } = await newWorkspace("Reads ws");
    await freshUser(owner.token, owner.id);
    const { res, calls } = await counted("GET", `/api/workspaces/${workspace.id}`, owner.token);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id: workspace.id, role: "owner", name: "Reads ws" });
    expect(calls).toEqual(["BatchGetItem"]);
  });

  it("the other by-id resources read one BatchGet warm too (recommendation, research source)", async () => {
    const { owner, workspace } = await newWorkspace("Reads rec");
    const rec = await call("POST", "/api/recommendations", {
      token: owner.token,
      body: { workspace_id: workspace.id, title: "Add dark mode", description: "Users ask for it", impact_score: 0.8, effort_estimate: "medium" },
    });
    expect(rec.status, rec.text).toBe(201);
    await counted("GET", `/api/recommendations/${rec.body.id}`, owner.token);
    await freshUser(owner.token, owner.id);
    const warm = await counted("GET", `/api/recommendations/${rec.body.id}`, owner.token);
    expect(warm.res.status, warm.res.text).toBe(200);
    expect(warm.res.body).toMatchObject({ id: rec.body.id, title: "Add dark mode" });
    expect(warm.calls).toEqual(["BatchGetItem"]);

    const sourceId = await sourceWith(owner.token, workspace.id, ["Please add a dark mode"], "reads.md");
    await counted("GET", `/api/research/sources/${sourceId}`, owner.token);
    await freshUser(owner.token, owner.id);
    const source = await counted("GET", `/api/research/sources/${sourceId}`, owner.token);
    expect(source.res.status, source.res.text).toBe(200);
    expect(source.res.body).toMatchObject({ id: sourceId, workspace_id: workspace.id });
    expect(source.calls).toEqual(["BatchGetItem"]);
  });
});

describe("GET by id: who may read", () => {
  it("a removed member is refused on their next request (memberships are not remembered across requests)", async () => {
    const { owner, workspace } = await newWorkspace("Reads removal");
    const member = await newUser();
    await addMember(owner.token, workspace.id, member.email);
    const id = await createInsight(owner.token, workspace.id);

    expect((await call("GET", `/api/insights/${id}`, { token: member.token })).status).toBe(200);
    expect((await call("GET", `/api/workspaces/${workspace.id}`, { token: member.token })).status).toBe(200);
    const removed = await call("DELETE", `/api/workspaces/${workspace.id}/members/${member.id}`, { token: owner.token });
    expect(removed.status, removed.text).toBe(204);

    // Warm id and warm user: the one BatchGet finds no membership, so nothing of the item is returned.
    await freshUser(member.token, member.id);
    const after = await counted("GET", `/api/insights/${id}`, member.token);
    expectEnvelope(after.res, 404, "NOT_FOUND");
    expect(after.res.text).not.toContain("Something users said");
    expect(after.calls).toEqual(["BatchGetItem"]);
    expectEnvelope(await call("GET", `/api/workspaces/${workspace.id}`, { token: member.token }), 403, "FORBIDDEN");
  });

  it("404 or 403: an outsider gets 404 for a resource by id and 403 for the workspace; a member 404 for a missing id", async () => {
    const { owner, workspace } = await newWorkspace("Reads outsiders");
    const outsider = await newUser();
    const id = await createInsight(owner.token, workspace.id);
    await call("GET", `/api/insights/${id}`, { token: owner.token }); // the id is warm in this container

    expectEnvelope(await call("GET", `/api/insights/${id}`, { token: outsider.token }), 404, "NOT_FOUND");
    expectEnvelope(await call("GET", `/api/insights/${randomUUID()}`, { token: outsider.token }), 404, "NOT_FOUND");
    expectEnvelope(await call("GET", `/api/workspaces/${workspace.id}`, { token: outsider.token }), 403, "FORBIDDEN");
    expectEnvelope(await call("GET", `/api/workspaces/${randomUUID()}`, { token: outsider.token }), 403, "FORBIDDEN");
    expectEnvelope(await call("GET", `/api/insights/${randomUUID()}`, { token: owner.token }), 404, "NOT_FOUND");
  });

  it("a deleted item is 404 at once although its location is remembered", async () => {
    const { owner, workspace } = await newWorkspace("Reads delete");
    const id = await createInsight(owner.token, workspace.id);
    expect((await call("GET", `/api/insights/${id}`, { token: owner.token })).status).toBe(200);
    const del = await call("DELETE", `/api/insights/${id}`, { token: owner.token });
    expect(del.status, del.text).toBe(204);
    expectEnvelope(await call("GET", `/api/insights/${id}`, { token: owner.token }), 404, "NOT_FOUND");
  });
});

describe("the user cache's bound (core/user USER_CACHE_TTL_MS)", () => {
  it("a suspension made by another container takes effect within the bound; the user is then read again", async () => {
    const { owner, workspace } = await newWorkspace("Reads suspension");
    const read = await freshUser(owner.token, owner.id); // the active user, kept from between these two times
    // Another container (an admin's revoke there) wrote the item: this one still holds the active user, up to the bound.
    await db().entities.user.patch({ id: owner.id }).set({ access_status: "suspended" }).go();
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(read.before + User.USER_CACHE_TTL_MS - 1_000);
    const within = await counted("GET", `/api/workspaces/${workspace.id}`, owner.token);
    expect(within.res.status).toBe(200);
    expect(within.calls).toEqual(["BatchGetItem"]);

    vi.setSystemTime(read.after + User.USER_CACHE_TTL_MS + 1); // past the bound (an entry is stale once older than it)
    const after = await counted("GET", `/api/workspaces/${workspace.id}`, owner.token);
    expectEnvelope(after.res, 403, "FORBIDDEN");
    expect(after.res.body.detail).toMatch(/suspended/);
    expect(after.calls).toEqual(["GetItem"]); // the user, read again; nothing of the workspace is read
  });

  it("a suspension made in this container (User.revokeAccess) takes effect on the next request", async () => {
    const { owner, workspace } = await newWorkspace("Reads revoke");
    expect((await call("GET", `/api/workspaces/${workspace.id}`, { token: owner.token })).status).toBe(200);
    await User.revokeAccess(owner.id);
    expectEnvelope(await call("GET", `/api/workspaces/${workspace.id}`, { token: owner.token }), 403, "FORBIDDEN");
  });

  it("a pending user is never served from memory: a redemption elsewhere counts at their next request", async () => {
    const prev = process.env.ACCESS_GATING;
    process.env.ACCESS_GATING = "true";
    try {
      const u = await newUser();
      expect(u.profile.access_status).toBe("pending");
      // Another container redeemed a code for them.
      await db().entities.user.patch({ id: u.id }).set({ access_status: "active", activated_at: new Date().toISOString() }).go();
      const me = await call("GET", "/api/auth/me", { token: u.token });
      expect(me.body).toMatchObject({ access_status: "active", has_product_access: true });
      const ws = await call("POST", "/api/workspaces", { token: u.token, body: { name: "Right after redeeming" } });
      expect(ws.status, ws.text).toBe(201);
    } finally {
      if (prev === undefined) delete process.env.ACCESS_GATING;
      else process.env.ACCESS_GATING = prev;
    }
  });
});

describe("items read ahead beside the membership (core/workspace requireMemberWithWorkspace, core/db/read.ts Prefetch)", () => {
  /** The commands the handlers' client sends while `fn` runs in a request scope of its own. */
  const inScope = async <T>(fn: () => Promise<T>): Promise<{ result: T; calls: string[] }> => {
    const calls: string[] = [];
    const result = await counting.run(calls, () => withRequestScope(fn));
    return { result, calls };
  };

  it("reads them in the membership's round trip and hands each to its owner once the check passed", async () => {
    const { owner, workspace } = await newWorkspace("Ahead");
    const search = prefetchSearchHead(workspace.id);
    const memory = prefetchMemoryHead(workspace.id, owner.id);
    const kept: unknown[] = [];
    const spy = (p: Prefetch): Prefetch => ({ ref: p.ref, keep: (item) => (kept.push(item), p.keep(item)) });
    const { calls } = await inScope(async () => {
      const { workspace: read } = await requireMemberWithWorkspace(owner.id, workspace.id, { prefetch: [spy(search), spy(memory)] });
      expect(read.id).toBe(workspace.id);
      // The memory head the request kept answers the memory's version check: no read.
      expect(await headVersion(workspace.id, owner.id)).toBe(0);
    });
    expect(calls).toEqual(["BatchGetItem"]);
    // A new workspace has its (empty, built) search head and no memory head: the second is handed over as null.
    expect(kept).toHaveLength(2);
    expect(kept[0]).toMatchObject({ sk: "searchix#head", built: true });
    expect(kept[1]).toBeNull();
  });

  it("an item asked for twice (two owners reading the same key) is read once and handed to both", async () => {
    const { owner, workspace } = await newWorkspace("Ahead twice");
    const kept: unknown[] = [];
    const twice = [0, 1].map((): Prefetch => ({ ref: prefetchSearchHead(workspace.id).ref, keep: (item) => void kept.push(item) }));
    const { calls } = await inScope(() => requireMemberWithWorkspace(owner.id, workspace.id, { prefetch: twice }));
    // BatchGetItem refuses a request naming a key twice: the read would have failed.
    expect(calls).toEqual(["BatchGetItem"]);
    expect(kept).toHaveLength(2);
    expect(kept[0]).toMatchObject({ sk: "searchix#head" });
    expect(kept[1]).toEqual(kept[0]);
  });

  it("a non-member gets 403 and none of them", async () => {
    const { workspace } = await newWorkspace("Ahead, not yours");
    const outsider = await newUser();
    const keep = vi.fn();
    await expect(
      inScope(() => requireMemberWithWorkspace(outsider.id, workspace.id, { prefetch: [{ ref: prefetchSearchHead(workspace.id).ref, keep }] })),
    ).rejects.toMatchObject({ code: "FORBIDDEN" });
    expect(keep).not.toHaveBeenCalled();
  });

  it("a memory head kept ahead answers for MEMORY_HEAD_REUSE_MS from its read, and not after a write of this container", async () => {
    const { owner, workspace } = await newWorkspace("Memory ahead");
    /** The commands one version check sends, in the current request scope. */
    const versionCheck = async () => {
      const calls: string[] = [];
      await counting.run(calls, () => headVersion(workspace.id, owner.id));
      return calls;
    };
    const ahead = () => requireMemberWithWorkspace(owner.id, workspace.id, { prefetch: [prefetchMemoryHead(workspace.id, owner.id)] });
    try {
      await withRequestScope(async () => {
        // The head was read between these two times.
        const before = Date.now();
        await ahead();
        const after = Date.now();
        vi.spyOn(Date, "now").mockReturnValue(before + MEMORY_HEAD_REUSE_MS);
        expect(await versionCheck()).toEqual([]);
        vi.spyOn(Date, "now").mockReturnValue(after + MEMORY_HEAD_REUSE_MS + 1);
        expect(await versionCheck()).toEqual(["GetItem"]); // too old: read again
        vi.restoreAllMocks();
        await ahead();
        forgetCached(workspace.id, owner.id); // this container wrote the user's memory
        expect(await versionCheck()).toEqual(["GetItem"]);
      });
      // Another request keeps nothing of this one's.
      expect((await inScope(() => headVersion(workspace.id, owner.id))).calls).toEqual(["GetItem"]);
    } finally {
      vi.restoreAllMocks();
    }
  });

  it("a memory read as of an older kept head does not replace the container's newer cached memory", async () => {
    const { owner, workspace } = await newWorkspace("Memory, older head");
    // Another container's write of the user's memory: its head version moves.
    const bump = () => db().entities.memoryHead.update({ workspace_id: workspace.id, user_id: owner.id }).add({ version: 1 }).go();
    await bump();
    let kept!: () => void;
    const headKept = new Promise<void>((r) => (kept = r));
    let resume!: () => void;
    const paused = new Promise<void>((r) => (resume = r));
    // A stream read the head beside its membership, then reads its memory after the head moved.
    const older = withRequestScope(async () => {
      await requireMemberWithWorkspace(owner.id, workspace.id, { prefetch: [prefetchMemoryHead(workspace.id, owner.id)] });
      kept();
      await paused;
      return loadMemory(workspace.id, owner.id, null);
    });
    await headKept;
    await bump();
    expect((await inScope(() => loadMemory(workspace.id, owner.id, null))).result.version).toBe(2); // cached at 2
    resume();
    expect((await older).version).toBe(1);
    const { result, calls } = await inScope(() => loadMemory(workspace.id, owner.id, null));
    expect(result.version).toBe(2);
    expect(calls).toEqual(["GetItem"]); // the head's version only: the memory at 2 is still cached
  });

  it("a write of the user's memory in the request drops the head it kept: learning a fact, forgetting them all", async () => {
    const { owner, workspace } = await newWorkspace("Memory written ahead");
    const ahead = () => requireMemberWithWorkspace(owner.id, workspace.id, { prefetch: [prefetchMemoryHead(workspace.id, owner.id)] });
    const version = () => headVersion(workspace.id, owner.id);
    await withRequestScope(async () => {
      vi.spyOn(Date, "now").mockReturnValue(Date.now()); // the kept head never expires here: only a write drops it
      await ahead();
      const before = await version();
      const learned = await learnFromStatement(
        { workspaceId: workspace.id, userId: owner.id, conversationId: randomUUID(), messageId: randomUUID(), text: "We use Mixpanel for product analytics.", at: new Date().toISOString() },
        { model: null },
      );
      expect(learned.facts.length).toBeGreaterThan(0);
      const afterLearning = await version();
      expect(afterLearning).toBeGreaterThan(before);
      await ahead(); // kept again, at the new version
      expect((await forgetAll(owner.id, { workspace_id: workspace.id })).deleted).toBeGreaterThan(0);
      expect(await version()).toBeGreaterThan(afterLearning);
    });
  });
});
