/**
 * Documents benchmark (issue #24, "ten times today's data"; docs/decisions.md "Documents are listed from a sparse
 * index"): listing a workspace's documents when they have many revisions and blocks.
 *
 * A document's revisions, blocks, notes and tickets share its sort-key prefix, so the partition Query the listings
 * used (ElectroDB's `document.query.byWorkspace`) read every child, revisions with their full texts, to find the
 * documents. They now read the sparse index of documents (core/document/listing.ts `documentsOf`). One workspace on
 * Power gets DOCUMENTS documents of real text (a transcript of ../shared/realdata), each edited and saved REVISIONS
 * times and given BLOCKS blocks, through the core calls the routes run. Then, side by side in this process, ROUNDS
 * times each, alternately:
 * - `GET /api/documents` through the local gateway (the route as a user calls it), now;
 * - the read behind it, before (the partition Query, strongly consistent, as `list` sent it) and now (`documentsOf`);
 * - the copilot's per-stream read of ids and titles (core/harness/profile.ts), before and now;
 * with the items DynamoDB read for each (`ScannedCount`, what read capacity is paid for), the Query pages, and p50.
 * Last, the one-time cost of an older workspace's first listing at this size (the partition read and the backfill of
 * every document's index keys), its mark and keys removed first.
 *
 *   npm run bench -- documents
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { readFile } from "node:fs/promises";
import { DeleteCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { startBenchRuntime } from "./lib/runtime";
import { LoopbackClient } from "./lib/http";
import { Recorder, fmtMs, printTable, since } from "./lib/stats";
import { busyWarning, machineLine } from "./lib/machine";
import { simulatePaidUpgrade } from "./lib/billing";
import { sized, sizeNote } from "./lib/size";

const DOCUMENTS = sized(100, 4);
const REVISIONS = sized(10, 2);
const BLOCKS = sized(5, 1);
const ROUNDS = sized(30, 2);
/** Documents set up at once. */
const SETUP_CONCURRENCY = 4;
const TRANSCRIPT = new URL("../../shared/realdata/jupyter/transcripts/practical-ai-74-tania-allard-jupyter-notebooks.md", import.meta.url).pathname;

/** What one measured read cost DynamoDB: Query pages and items read. */
interface Cost {
  pages: number;
  scanned: number;
}
const costing = new AsyncLocalStorage<Cost>();

export default async function documents(): Promise<void> {
  console.log(`documents benchmark — ${machineLine()}`);
  const warn = busyWarning();
  if (warn) console.log(warn);
  if (sizeNote()) console.log(sizeNote());
  const rt = await startBenchRuntime();
  const http = new LoopbackClient(rt.base);
  try {
    const { Config } = await import("../core/config");
    const { dynamoClient } = await import("../core/db/client");
    const { db } = await import("../core/db/service");
    const Documents = await import("../core/document");
    const { createBlock } = await import("../core/document/block-ops");
    const { documentsOf } = await import("../core/document/listing");
    const { documentIndexMarkKeysOf } = await import("../core/document/document.entity");
    const { partitionKeys, queryPrefix } = await import("../core/db/partition");

    dynamoClient().middlewareStack.add(
      (next) => async (args) => {
        const out = await next(args);
        const cost = costing.getStore();
        const scanned = (out.output as { ScannedCount?: number }).ScannedCount;
        if (cost && scanned !== undefined) (cost.pages += 1), (cost.scanned += scanned);
        return out;
      },
      { step: "initialize", name: "documentsBenchCost" },
    );

    const token = await rt.idp.sign({ email: "bench-documents@example.com", name: "Bench Documents" });
    const me = JSON.parse((await http.request("GET", "/api/auth/me", { token })).body) as { id: string };
    const ws = JSON.parse((await http.request("POST", "/api/workspaces", { token, json: { name: "bench documents" } })).body) as { id: string };
    // A trial drafts 20 documents a month; Power has no such limit.
    await simulatePaidUpgrade(rt, { token, workspaceId: ws.id, plan: "power" });

    const text = (await readFile(TRANSCRIPT, "utf8")).slice(0, 8_000);
    let t0 = performance.now();
    const made: string[] = [];
    const one = async (d: number) => {
      const doc = await Documents.create(me.id, { workspace_id: ws.id, document_type: "prd", title: `Notebook findings ${d}`, content: text, related_insight_ids: [] });
      for (let r = 0; r < REVISIONS; r++) {
        await Documents.update(me.id, doc.id, { content: `${text}\n\nRevision ${r + 1} of document ${d}.\n` });
        await Documents.saveRevision(me.id, doc.id, `edit ${r + 1}`);
      }
      for (let b = 0; b < BLOCKS; b++) await createBlock(me.id, doc.id, Documents.CreateBlockInput.parse({ block_type: "risk", title: `Risk ${b}` }));
      made.push(doc.id);
    };
    for (let d = 0; d < DOCUMENTS; d += SETUP_CONCURRENCY) {
      await Promise.all(Array.from({ length: Math.min(SETUP_CONCURRENCY, DOCUMENTS - d) }, (_, k) => one(d + k)));
    }
    const partition = await queryPrefix(documentIndexMarkKeysOf(ws.id).pk, "document#");
    const revisions = partition.filter((i) => i.__edb_e__ === "document_revision").length;
    const blocks = partition.filter((i) => i.__edb_e__ === "document_block").length;
    console.log(
      `set up in ${(since(t0) / 1000).toFixed(1)} s: ${made.length} documents of ${text.length.toLocaleString("en-US")} characters, ` +
        `${revisions} revisions, ${blocks} blocks (${partition.length} items under the documents' sort-key prefix)`,
    );

    /** `costed` is false for the route: its DynamoDB calls run in the gateway's own request context, not measured here. */
    type Piece = { name: string; run: () => Promise<number>; rec: Recorder; cost?: Cost; costed?: false };
    const before = (attributes?: ("id" | "title")[]) => async () =>
      (await db().entities.document.query.byWorkspace({ workspace_id: ws.id }).go({ pages: "all", consistent: true, ...(attributes ? { attributes } : {}) })).data.length;
    const pieces: Piece[] = [
      {
        name: "GET /api/documents (the route, now)",
        rec: new Recorder(),
        costed: false,
        run: async () => {
          const res = await http.request("GET", `/api/documents?workspace_id=${ws.id}&limit=20`, { token });
          if (res.status !== 200) throw new Error(`GET /api/documents answered ${res.status}: ${res.body.slice(0, 200)}`);
          return (JSON.parse(res.body) as { total: number }).total;
        },
      },
      { name: "its read, before: partition Query, whole items", rec: new Recorder(), run: before() },
      { name: "its read, now: documentsOf, whole items", rec: new Recorder(), run: async () => (await documentsOf(ws.id)).length },
      { name: "copilot profile, before: partition Query, id + title", rec: new Recorder(), run: before(["id", "title"]) },
      { name: "copilot profile, now: documentsOf, id + title", rec: new Recorder(), run: async () => (await documentsOf(ws.id, { attributes: ["id", "title"] })).length },
    ];
    for (const p of pieces) await p.run(); // warm-up: the route's code, the entities, the connection
    for (let r = 0; r < ROUNDS; r++) {
      for (const p of pieces) {
        const cost: Cost = { pages: 0, scanned: 0 };
        const t = performance.now();
        const n = await costing.run(cost, p.run);
        p.rec.record(since(t));
        if (n !== DOCUMENTS) throw new Error(`${p.name}: ${n} documents, expected ${DOCUMENTS}`);
        p.cost = cost;
      }
    }

    // An older workspace's first listing: no mark, no index keys; the partition is read once and every document indexed.
    const keys = documentIndexMarkKeysOf(ws.id);
    await dynamoClient().send(new DeleteCommand({ TableName: Config.tableName(), Key: { pk: keys.pk, sk: keys.sk } }));
    for (const k of (await partitionKeys(keys.pk, "document#")).filter((k) => made.some((id) => k.sk === `document#${id}`))) {
      await dynamoClient().send(new UpdateCommand({ TableName: Config.tableName(), Key: k, UpdateExpression: "REMOVE gsi3pk, gsi3sk" }));
    }
    const firstCost: Cost = { pages: 0, scanned: 0 };
    t0 = performance.now();
    const first = await costing.run(firstCost, () => documentsOf(ws.id, { attributes: ["id"] }));
    const firstMs = since(t0);
    const after = await documentsOf(ws.id, { attributes: ["id"] });
    if (first.length !== DOCUMENTS || after.length !== DOCUMENTS) throw new Error(`after the backfill: ${first.length} then ${after.length} documents, expected ${DOCUMENTS}`);

    console.log(`\nListing ${DOCUMENTS} documents (${revisions} revisions, ${blocks} blocks beside them), ${ROUNDS} rounds, pieces interleaved; ms:`);
    printTable(
      ["read", "p50", "p90", "min", "Query pages", "items read", "vs before (same read)"],
      pieces.map((p, i) => {
        const s = p.rec.summary();
        const ref = i === 2 ? pieces[1] : i === 4 ? pieces[3] : undefined;
        const cost = p.costed === false ? ["–", "–"] : [p.cost!.pages, p.cost!.scanned];
        return [p.name, fmtMs(s.p50), fmtMs(s.p90), fmtMs(s.min), ...cost, ref ? `${(ref.rec.summary().p50 / s.p50).toFixed(1)}x faster, ${(ref.cost!.scanned / p.cost!.scanned).toFixed(1)}x fewer items` : ""];
      }),
    );
    console.log(
      `\nAn older workspace's first listing (once; the partition read and ${DOCUMENTS} index-key updates): ${fmtMs(firstMs)} ms, ` +
        `${firstCost.pages} Query pages, ${firstCost.scanned} items read; the next listing reads the index (${after.length} documents).`,
    );
  } finally {
    await http.close();
    await rt.stop();
  }
}
