/**
 * The per-workspace search snapshot (core/insight/search-index.ts) against DynamoDB Local: a change applied after its
 * write shows in the rows and bumps the version; a deleted insight's row goes; a change whose writer died is noticed
 * as stale and re-applied by the next reader; concurrent writers of one shard all land; a shard past one item's size
 * is split into pages and shrinks back; a workspace older than the snapshot is built from its insights.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { db } from "../../../core/db/service";
import { encodeInt8, normalize, quantizeInt8 } from "../../../core/ai/vectors";
import {
  asChange, beginChange, finishChange, loadRows, loadSnapshot, PAGE_BYTES, readHead, rebuild, repairStale, saveLexical, shardOf, STALE_PENDING_MS,
} from "../../../core/insight/search-index";
import { partitionKeys } from "../../../core/db/partition";

const put = (workspace_id: string, id: string, title: string, extra: Record<string, unknown> = {}) =>
  db().entities.insight.create({ id, workspace_id, insight_type: "pain_point", title, description: `About ${title}`, ...extra }).go();

const vectorFields = (seed: number) => {
  const q = quantizeInt8(normalize(Array.from({ length: 16 }, (_, i) => Math.sin(seed * (i + 1)))));
  return { search_vector: encodeInt8(q.codes), search_scale: q.scale, search_embedder_id: "test-embedder" };
};

describe("search snapshot", () => {
  it("applies a change after its write: rows follow creates, edits and deletes; each change bumps the version", async () => {
    const ws = randomUUID();
    const [a, b] = [randomUUID(), randomUUID()];
    expect(await readHead(ws)).toEqual({ version: 0, built: false, pending: [] });
    await asChange(ws, [a, b], async () => {
      await put(ws, a, "Login loops", vectorFields(1));
      await put(ws, b, "Dark mode");
    });
    let rows = await loadRows(ws);
    expect(rows.map((r) => r.title).sort()).toEqual(["Dark mode", "Login loops"]);
    const ra = rows.find((r) => r.id === a)!;
    expect(ra).toMatchObject({ embedder_id: "test-embedder", insight_type: "pain_point", description: "About Login loops", frequency: 1 });
    expect(ra.codes).toHaveLength(16);
    expect(rows.find((r) => r.id === b)).toMatchObject({ embedder_id: null, codes: null });
    expect(await readHead(ws)).toMatchObject({ version: 1, pending: [] });

    await asChange(ws, [b], () => db().entities.insight.patch({ workspace_id: ws, id: b }).set({ title: "Dark theme", frequency: 3 }).go());
    await asChange(ws, [a], () => db().entities.insight.delete({ workspace_id: ws, id: a }).go());
    rows = await loadRows(ws);
    expect(rows.map((r) => [r.id, r.title, r.frequency])).toEqual([[b, "Dark theme", 3]]);
    expect((await readHead(ws)).version).toBe(3);
  });

  it("clears its pending entries even when the write fails, and rethrows", async () => {
    const ws = randomUUID();
    const id = randomUUID();
    await expect(asChange(ws, [id], async () => Promise.reject(new Error("write refused")))).rejects.toThrow("write refused");
    expect(await readHead(ws)).toMatchObject({ version: 1, pending: [] });
    expect(await loadRows(ws)).toEqual([]);
  });

  it("re-applies a change whose writer died once it is older than the stale bound, and not before", async () => {
    const ws = randomUUID();
    const id = randomUUID();
    await beginChange(ws, [id]);
    await put(ws, id, "Written, never applied"); // the writer dies here
    const head = await readHead(ws);
    expect(head.pending.map((p) => p.id)).toEqual([id]);
    expect(await repairStale(ws, head)).toBe(false); // young: its writer may still be at work
    expect(await loadRows(ws)).toEqual([]);
    expect(await repairStale(ws, head, Date.now() + STALE_PENDING_MS)).toBe(true);
    expect((await loadRows(ws)).map((r) => r.id)).toEqual([id]);
    expect(await readHead(ws)).toMatchObject({ version: 1, pending: [] });
  });

  it("lands every change of concurrent writers to one shard (conditional rewrites retried)", async () => {
    const ws = randomUUID();
    const ids: string[] = [];
    while (ids.length < 12) {
      const id = randomUUID();
      if (shardOf(id) === 5) ids.push(id);
    }
    await Promise.all(ids.map((id, k) => asChange(ws, [id], () => put(ws, id, `Concurrent ${k}`))));
    expect((await loadRows(ws)).map((r) => r.id).sort()).toEqual([...ids].sort());
    expect((await readHead(ws)).version).toBe(12);
  });

  it("splits a shard past one item's size into pages, and deletes the surplus pages when it shrinks", async () => {
    const ws = randomUUID();
    const ids: string[] = [];
    while (ids.length < 90) {
      const id = randomUUID();
      if (shardOf(id) === 9) ids.push(id);
    }
    // Text that does not deflate (row text is stored deflated), 8,000 characters each: over one page in all.
    const long = () => randomBytes(6_000).toString("base64");
    await asChange(ws, ids, async () => {
      for (let i = 0; i < ids.length; i += 20) await Promise.all(ids.slice(i, i + 20).map((id) => put(ws, id, id, { description: long() })));
    });
    const pages = async () => (await partitionKeys(`ws#${ws}`, "searchix#s#09#")).length;
    expect(await pages()).toBeGreaterThanOrEqual(2);
    expect(await loadRows(ws)).toHaveLength(90);
    await asChange(ws, ids.slice(2), async () => {
      for (const id of ids.slice(2)) await db().entities.insight.delete({ workspace_id: ws, id }).go();
    });
    expect(await pages()).toBe(1);
    expect((await loadRows(ws)).map((r) => r.id).sort()).toEqual(ids.slice(0, 2).sort());
  });

  it("builds the snapshot of a workspace whose insights predate it (stored vectors, nothing embedded) and marks it built", async () => {
    const ws = randomUUID();
    const ids = [randomUUID(), randomUUID(), randomUUID()];
    await Promise.all(ids.map((id, k) => put(ws, id, `Old insight ${k}`, k === 0 ? vectorFields(3) : {})));
    expect(await loadRows(ws)).toEqual([]);
    await rebuild(ws, ids);
    const rows = await loadRows(ws);
    expect(rows.map((r) => r.id).sort()).toEqual([...ids].sort());
    expect(rows.filter((r) => r.codes).map((r) => r.id)).toEqual([ids[0]]);
    expect(await readHead(ws)).toMatchObject({ built: true, version: 1 });
  });

  it("stores a lexical index beside the rows: a newer version replaces it, an older one does not, pages follow its size", async () => {
    const ws = randomUUID();
    expect((await loadSnapshot(ws)).lexical).toBeNull();
    await saveLexical(ws, 5, '{"v":5}', 0);
    expect((await loadSnapshot(ws)).lexical).toEqual({ version: 5, json: '{"v":5}', pages: 1 });
    await saveLexical(ws, 4, '{"v":4}', 1);
    expect((await loadSnapshot(ws)).lexical).toMatchObject({ version: 5, json: '{"v":5}' });
    // Past one page (random text does not deflate): several pages, then back to one with the surplus deleted.
    const big = JSON.stringify({ v: 6, text: randomBytes(PAGE_BYTES).toString("base64") });
    await saveLexical(ws, 6, big, 1);
    const stored = (await loadSnapshot(ws)).lexical!;
    expect(stored).toMatchObject({ version: 6, json: big });
    expect(stored.pages).toBeGreaterThan(1);
    await saveLexical(ws, 7, '{"v":7}', stored.pages);
    expect((await loadSnapshot(ws)).lexical).toEqual({ version: 7, json: '{"v":7}', pages: 1 });
    expect(await partitionKeys(`ws#${ws}`, "searchix#lex#")).toHaveLength(1);
  });

  it("finishChange without ids writes nothing", async () => {
    const ws = randomUUID();
    await finishChange({ workspaceId: ws, ids: [], entries: [] });
    expect(await readHead(ws)).toEqual({ version: 0, built: false, pending: [] });
  });
});
