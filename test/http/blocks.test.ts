/**
 * Document blocks over HTTP (spec 01 Document block, Documents and blocks endpoints, Limits: block actions use up to
 * 8 surrounding blocks; DESIGN.md section 5 and docs/decisions.md: annotations, reorder body, actions store nothing):
 * list by position, create (content validated per type, default skeleton, insertion), patch (validated, moves),
 * delete (positions compacted), reorder, extract from a drafted PRD (re-extract replaces), intent parse,
 * expand / challenge / simulate with their context, and annotations with their delete rights.
 */
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { runsOf } from "../../core/agent";
import { dynamoClient } from "../../core/db/client";
import { db } from "../../core/db/service";
import { call, newUser, newWorkspace } from "../support/api";
import { sourceWith } from "../support/sources";
import { expectEnvelope, partitionItems } from "./_helpers";

type Block = { id: string; block_type: string; title: string; content: Record<string, any>; position: number; document_id: string };

let ws: { token: string; workspaceId: string };
let outsider: string;

async function newDoc(content = "# Blocks\n", token = ws.token, workspaceId = ws.workspaceId) {
  const res = await call("POST", "/api/documents", { token, body: { workspace_id: workspaceId, document_type: "prd", title: "Blocks", content } });
  expect(res.status, res.text).toBe(201);
  return res.body.id as string;
}

const blocksPath = (docId: string) => `/api/documents/${docId}/blocks`;
const addBlock = (docId: string, body: Record<string, unknown>, token = ws.token) => call("POST", blocksPath(docId), { token, body });
async function added(docId: string, body: Record<string, unknown>): Promise<Block> {
  const res = await addBlock(docId, body);
  expect(res.status, res.text).toBe(201);
  return res.body;
}
async function listed(docId: string): Promise<Block[]> {
  const res = await call("GET", blocksPath(docId), { token: ws.token });
  expect(res.status, res.text).toBe(200);
  expect(res.body.total).toBe(res.body.blocks.length);
  return res.body.blocks;
}
/** Block titles in position order, asserting positions are exactly 0..n-1. */
async function order(docId: string): Promise<string[]> {
  const blocks = await listed(docId);
  expect(blocks.map((b) => b.position)).toEqual(blocks.map((_, k) => k));
  return blocks.map((b) => b.title);
}

beforeAll(async () => {
  const [{ owner, workspace }, stranger] = await Promise.all([newWorkspace("Blocks"), newUser()]);
  ws = { token: owner.token, workspaceId: workspace.id };
  outsider = stranger.token;
});

describe("blocks CRUD", () => {
  it("creates typed blocks with validated content, a default skeleton, and insertion that shifts later blocks", async () => {
    const doc = await newDoc();
    expect(await listed(doc)).toEqual([]);
    const problem = await added(doc, {
      block_type: "problem",
      title: "Logouts",
      content: { statement: "Users get logged out", evidence: [{ quote: "I keep getting logged out", source_id: randomUUID() }] },
    });
    expect(problem).toMatchObject({ document_id: doc, block_type: "problem", title: "Logouts", position: 0 });
    // Defaults of the type's contract are filled in.
    expect(problem.content).toEqual({ statement: "Users get logged out", evidence: [problem.content.evidence[0]], impact: "" });

    const skeletons: Record<string, Record<string, unknown>> = {
      persona: { name: "", description: "", goals: [], pain_points: [] },
      solution: { summary: "", details: [], alternatives_considered: [], non_goals: [] },
      metrics: { metrics: [] },
      user_story: { as_a: "", i_want: "", so_that: "", acceptance_criteria: [] },
      edge_case: { scenario: "", expected_behavior: "" },
      risk: { risk: "", mitigation: "" },
      timeline: { milestones: [] },
      free_text: { markdown: "" },
    };
    const titles: Record<string, string> = { persona: "Persona", solution: "Solution", metrics: "Success metrics", user_story: "User story", edge_case: "Edge case", risk: "Risk", timeline: "Timeline", free_text: "Notes" };
    for (const [type, skeleton] of Object.entries(skeletons)) {
      const b = await added(doc, { block_type: type });
      expect(b).toMatchObject({ block_type: type, content: skeleton, title: titles[type] });
    }
    const first = await added(doc, { block_type: "free_text", title: "Intro", content: { markdown: "Hello" }, position: 0 });
    expect(first.position).toBe(0);
    const third = await added(doc, { block_type: "free_text", title: "Third", content: { markdown: "x" }, position: 2 });
    expect(third.position).toBe(2);
    const tail = await added(doc, { block_type: "free_text", title: "Tail", content: { markdown: "x" }, position: 999 });
    expect(tail.position).toBe(11);
    expect(await order(doc)).toEqual(["Intro", "Logouts", "Third", "Persona", "Solution", "Success metrics", "User story", "Edge case", "Risk", "Timeline", "Notes", "Tail"]);
  });

  it("two inserts at the top at once: one lands, the other is 409 and leaves no block behind; positions stay 0..n-1", async () => {
    const doc = await newDoc();
    for (const title of ["A", "B", "C"]) await added(doc, { block_type: "free_text", title });
    // While the first insert's position shift is on its way, a second insert at the top runs from start to end. (The
    // shift, not the create: the create's transaction moves the document's blocks_rev, and a create that loses it
    // reads the blocks again; documents-races.test.ts races the creates.)
    const name = "insertRace";
    let raced = false;
    let second: Awaited<ReturnType<typeof addBlock>> | undefined;
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        const input = JSON.stringify(args.input);
        if (!raced && /TransactWrite/.test(String(context.commandName)) && input.includes(doc) && !input.includes("blocks_rev")) {
          raced = true;
          second = await addBlock(doc, { block_type: "free_text", title: "Second", position: 0 });
        }
        return next(args);
      },
      { step: "initialize", name },
    );
    let first;
    try {
      first = await addBlock(doc, { block_type: "free_text", title: "First", position: 0 });
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
    expect(raced).toBe(true);
    expect(second!.status, second!.text).toBe(201);
    expectEnvelope(first, 409, "CONFLICT");
    expect(await order(doc)).toEqual(["Second", "A", "B", "C"]);
  });

  it("rejects content that does not fit the block type (422 naming the fields)", async () => {
    const doc = await newDoc();
    const cases: [Record<string, unknown>, string][] = [
      [{ block_type: "problem", content: { statement: 5 } }, "body.content.statement"],
      [{ block_type: "problem", content: { statement: "x", colour: "red" } }, "body.content"],
      [{ block_type: "problem", content: { statement: "x", evidence: [{}] } }, "body.content.evidence.0"],
      [{ block_type: "persona", content: { description: "no name" } }, "body.content.name"],
      [{ block_type: "metrics", content: { metrics: [{ name: "NPS" }] } }, "body.content.metrics.0.target"],
      [{ block_type: "user_story", content: { as_a: "vet", i_want: "x", priority: "urgent" } }, "body.content.priority"],
      [{ block_type: "timeline", content: { milestones: [{ name: "Beta", target_date: "next week" }] } }, "body.content.milestones.0.target_date"],
      [{ block_type: "risk", content: { risk: "x", likelihood: "certain" } }, "body.content.likelihood"],
      [{ block_type: "free_text", content: { markdown: ["not", "text"] } }, "body.content.markdown"],
      [{ block_type: "chart" }, "body.block_type"],
      [{ block_type: "free_text", position: -1 }, "body.position"],
    ];
    for (const [body, loc] of cases) {
      const res = await addBlock(doc, body);
      expectEnvelope(res, 422, "VALIDATION_ERROR");
      expect(res.body.errors.map((e: { loc: (string | number)[] }) => e.loc.join(".")), JSON.stringify(body)).toContain(loc);
    }
    expect(await listed(doc)).toEqual([]);
    expectEnvelope(await addBlock(doc, { block_type: "problem" }, outsider), 404, "NOT_FOUND");
    expectEnvelope(await addBlock(randomUUID(), { block_type: "problem" }), 404, "NOT_FOUND");
  });

  it("patches title and content (validated against the block's type) and moves a block, shifting the others", async () => {
    const doc = await newDoc();
    const [a, b, c, d] = [await added(doc, { block_type: "solution", title: "A" }), await added(doc, { block_type: "free_text", title: "B" }), await added(doc, { block_type: "free_text", title: "C" }), await added(doc, { block_type: "free_text", title: "D" })];
    const patchBlock = (id: string, body: Record<string, unknown>) => call("PATCH", `${blocksPath(doc)}/${id}`, { token: ws.token, body });

    const res = await patchBlock(a.id, { title: "Remember me", content: { summary: "Keep users signed in", details: ["30-day session"] } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id: a.id, title: "Remember me", block_type: "solution", position: 0, content: { summary: "Keep users signed in", details: ["30-day session"], alternatives_considered: [], non_goals: [] } });
    // Content is checked against the block's own type (a problem's shape is not a solution).
    const wrong = await patchBlock(a.id, { content: { statement: "Users get logged out" } });
    expectEnvelope(wrong, 422, "VALIDATION_ERROR");
    expect(wrong.body.errors.map((e: { loc: string[] }) => e.loc.join("."))).toContain("body.content.summary");
    expectEnvelope(await patchBlock(a.id, { block_type: "problem" }), 422, "VALIDATION_ERROR");
    expect((await listed(doc))[0]!.content.summary).toBe("Keep users signed in");

    const moved = await patchBlock(d.id, { position: 1 });
    expect(moved.body.position).toBe(1);
    expect(await order(doc)).toEqual(["Remember me", "D", "B", "C"]);
    await patchBlock(d.id, { position: 3 });
    expect(await order(doc)).toEqual(["Remember me", "B", "C", "D"]);
    const beyond = await patchBlock(b.id, { position: 50 });
    expect(beyond.body.position).toBe(3);
    expect(await order(doc)).toEqual(["Remember me", "C", "D", "B"]);
    expectEnvelope(await patchBlock(randomUUID(), { title: "x" }), 404, "NOT_FOUND");
    expectEnvelope(await call("PATCH", `${blocksPath(doc)}/${c.id}`, { token: outsider, body: { title: "x" } }), 404, "NOT_FOUND");
    // A block is only reachable under its own document.
    const otherDoc = await newDoc();
    expectEnvelope(await call("PATCH", `${blocksPath(otherDoc)}/${c.id}`, { token: ws.token, body: { title: "x" } }), 404, "NOT_FOUND");
  });

  it("deletes a block (204) and compacts the positions of the rest", async () => {
    const doc = await newDoc();
    const blocks = [];
    for (const t of ["A", "B", "C", "D"]) blocks.push(await added(doc, { block_type: "free_text", title: t }));
    const del = await call("DELETE", `${blocksPath(doc)}/${blocks[1]!.id}`, { token: ws.token });
    expect(del.status).toBe(204);
    expect(await order(doc)).toEqual(["A", "C", "D"]);
    await call("DELETE", `${blocksPath(doc)}/${blocks[0]!.id}`, { token: ws.token });
    expect(await order(doc)).toEqual(["C", "D"]);
    expectEnvelope(await call("DELETE", `${blocksPath(doc)}/${blocks[0]!.id}`, { token: ws.token }), 404, "NOT_FOUND");
    expectEnvelope(await call("DELETE", `${blocksPath(doc)}/${blocks[2]!.id}`, { token: outsider }), 404, "NOT_FOUND");
  });

  it("reorders by a permutation of all blocks; missing, unknown and duplicate ids are 422 naming them", async () => {
    const doc = await newDoc();
    const b: Block[] = [];
    for (const t of ["A", "B", "C"]) b.push(await added(doc, { block_type: "free_text", title: t }));
    const [A, B, C] = b as [Block, Block, Block];
    const reorder = (block_ids: string[], token = ws.token) => call("PATCH", `${blocksPath(doc)}/reorder`, { token, body: { block_ids } });

    const res = await reorder([C.id, A.id, B.id]);
    expect(res.status, res.text).toBe(200);
    expect(res.body.blocks.map((x: Block) => [x.title, x.position])).toEqual([["C", 0], ["A", 1], ["B", 2]]);
    expect(await order(doc)).toEqual(["C", "A", "B"]);

    const stranger = randomUUID();
    const missing = await reorder([A.id, B.id]);
    expectEnvelope(missing, 422, "VALIDATION_ERROR");
    expect(missing.body.errors).toEqual([{ loc: ["body", "block_ids"], msg: `block ${C.id} is missing`, type: "missing" }]);
    const unknown = await reorder([A.id, B.id, C.id, stranger]);
    expectEnvelope(unknown, 422, "VALIDATION_ERROR");
    expect(unknown.body.errors).toEqual([{ loc: ["body", "block_ids"], msg: `block ${stranger} is not in this document`, type: "unknown_id" }]);
    const dup = await reorder([A.id, A.id, B.id, C.id]);
    expectEnvelope(dup, 422, "VALIDATION_ERROR");
    expect(dup.body.errors).toEqual([{ loc: ["body", "block_ids"], msg: `block ${A.id} appears more than once`, type: "duplicate" }]);
    const all = await reorder([B.id, B.id, stranger]);
    expect(all.body.errors.map((e: { type: string }) => e.type).sort()).toEqual(["duplicate", "missing", "missing", "unknown_id"]);
    expect(all.body.errors.map((e: { msg: string }) => e.msg).join(" ")).toContain(A.id);
    expectEnvelope(await reorder([]), 422, "VALIDATION_ERROR");
    expectEnvelope(await reorder([C.id, A.id, B.id], outsider), 404, "NOT_FOUND");
    // A refused reorder changes nothing.
    expect(await order(doc)).toEqual(["C", "A", "B"]);
  });
});

describe("POST /api/blocks/extract", () => {
  it("extracts typed blocks from a drafted PRD's Markdown; extracting again replaces them", async () => {
    const quotes = ["I keep getting logged out and have to sign in again every time", "It takes five screens to refill one prescription"];
    // A research source of the workspace holding the quotes verbatim (an insight may only quote its own sources).
    const src = await sourceWith(ws.token, ws.workspaceId, quotes);
    const insightIds: string[] = [];
    for (const [k, title] of ["Users get logged out and struggle to sign in", "Refilling prescriptions takes too many steps"].entries()) {
      const res = await call("POST", "/api/insights", {
        token: ws.token,
        body: { workspace_id: ws.workspaceId, insight_type: "pain_point", title, description: title, severity: "high", quotes: [{ text: quotes[k], source_id: src, speaker: "P1" }] },
      });
      expect(res.status, res.text).toBe(201);
      insightIds.push(res.body.id);
    }
    const rec = await call("POST", "/api/recommendations", {
      token: ws.token,
      body: { workspace_id: ws.workspaceId, title: "Keep veterans signed in", description: "Longer sessions with biometric unlock", addresses_insight_ids: insightIds, success_metrics: ["Sign-ins per week fall by 50%"] },
    });
    const drafted = await call("POST", "/api/documents/draft", { token: ws.token, body: { workspace_id: ws.workspaceId, document_type: "prd", recommendation_id: rec.body.id } });
    expect(drafted.status, drafted.text).toBe(200);
    const doc = drafted.body;

    const res = await call("POST", "/api/blocks/extract", { token: ws.token, body: { workspace_id: ws.workspaceId, document_id: doc.id } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ document_id: doc.id, replaced: 0 });
    const blocks: Block[] = res.body.blocks;
    expect(res.body.count).toBe(blocks.length);
    expect(blocks.length).toBeGreaterThan(3);
    expect(blocks.map((b) => b.position)).toEqual(blocks.map((_, k) => k));
    const types = new Set(blocks.map((b) => b.block_type));
    for (const t of ["problem", "solution", "metrics"]) expect(types, [...types].join(",")).toContain(t);
    const problem = blocks.find((b) => b.block_type === "problem")!;
    expect(problem.content.statement.length).toBeGreaterThan(0);
    // The PRD's evidence comes back as the problem's evidence, pointing at the insights.
    const evidence = blocks.filter((b) => b.block_type === "problem").flatMap((b) => b.content.evidence as { insight_id?: string; quote?: string }[]);
    expect(evidence.some((e) => e.insight_id && insightIds.includes(e.insight_id))).toBe(true);
    expect((await listed(doc.id)).map((b) => b.id)).toEqual(blocks.map((b) => b.id));

    const note = await call("POST", `${blocksPath(doc.id)}/${problem.id}/annotations`, { token: ws.token, body: { body: "Which users?" } });
    expect(note.status, note.text).toBe(201);

    const again = await call("POST", "/api/blocks/extract", { token: ws.token, body: { workspace_id: ws.workspaceId, document_id: doc.id } });
    expect(again.status).toBe(200);
    expect(again.body.replaced).toBe(blocks.length);
    expect(again.body.count).toBe(blocks.length);
    expect(again.body.blocks.map((b: Block) => [b.block_type, b.title, b.content])).toEqual(blocks.map((b) => [b.block_type, b.title, b.content]));
    const newIds = new Set(again.body.blocks.map((b: Block) => b.id));
    for (const b of blocks) expect(newIds.has(b.id)).toBe(false);
    expect((await listed(doc.id)).map((b) => b.id)).toEqual(again.body.blocks.map((b: Block) => b.id));
    // The replaced blocks' annotations are gone with them.
    const notes = (await partitionItems(`ws#${ws.workspaceId}`)).filter((i) => String(i.sk).startsWith(`document#${doc.id}#note#`));
    expect(notes).toEqual([]);

    // Two extractions at once (a double click): the blocks are replaced once, never doubled; a refused one is 409.
    const both = await Promise.all([0, 1].map(() => call("POST", "/api/blocks/extract", { token: ws.token, body: { workspace_id: ws.workspaceId, document_id: doc.id } })));
    expect(both.map((r) => r.status).sort()).toEqual(both.some((r) => r.status === 409) ? [200, 409] : [200, 200]);
    for (const r of both.filter((x) => x.status === 409)) expectEnvelope(r, 409, "CONFLICT");
    expect(await listed(doc.id)).toHaveLength(blocks.length);

    // DynamoDB leaving part of a batch write unprocessed (throttling): it is sent again, nothing is missing.
    const previous = new Set((await listed(doc.id)).map((b) => b.id));
    const name = "unprocessedOnce";
    let withheld = 0;
    dynamoClient().middlewareStack.add(
      (next) => async (args) => {
        const input = args.input as { RequestItems?: Record<string, { PutRequest?: unknown; DeleteRequest?: unknown }[]> };
        const [table, requests] = Object.entries(input.RequestItems ?? {})[0] ?? [];
        if (withheld < 2 && table && requests && requests.length > 1 && requests.every((r) => r.PutRequest || r.DeleteRequest) && JSON.stringify(requests).includes(doc.id)) {
          withheld++;
          const kept = requests.slice(0, -1);
          const out = (await next({ ...args, input: { ...input, RequestItems: { [table]: kept } } })) as { output: Record<string, unknown> };
          return { ...out, output: { ...out.output, UnprocessedItems: { [table]: requests.slice(-1) } } } as never;
        }
        return next(args);
      },
      { step: "initialize", name },
    );
    let replaced;
    try {
      replaced = await call("POST", "/api/blocks/extract", { token: ws.token, body: { workspace_id: ws.workspaceId, document_id: doc.id } });
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
    expect(withheld).toBe(2);
    expect(replaced.status, replaced.text).toBe(200);
    const now = await listed(doc.id);
    expect(now).toHaveLength(blocks.length);
    expect(now.filter((b) => previous.has(b.id))).toEqual([]);
    expect(replaced.body.blocks.map((b: Block) => b.id)).toEqual(now.map((b) => b.id));

    // The document must belong to the workspace named.
    const other = await newWorkspace("Other");
    expectEnvelope(await call("POST", "/api/blocks/extract", { token: other.owner.token, body: { workspace_id: other.workspace.id, document_id: doc.id } }), 404, "NOT_FOUND");
    expectEnvelope(await call("POST", "/api/blocks/extract", { token: ws.token, body: { workspace_id: other.workspace.id, document_id: doc.id } }), 403, "FORBIDDEN");
    expectEnvelope(await call("POST", "/api/blocks/extract", { token: ws.token, body: { workspace_id: ws.workspaceId, document_id: randomUUID() } }), 404, "NOT_FOUND");
    expectEnvelope(await call("POST", "/api/blocks/extract", { token: outsider, body: { workspace_id: ws.workspaceId, document_id: doc.id } }), 403, "FORBIDDEN");
  });
});

describe("POST /api/intent/parse", () => {
  it("decomposes free text into a block skeleton with at least a problem and a solution (nothing stored)", async () => {
    const raw = "Veterans keep getting logged out of the app, which is frustrating. We should add a remember-me option with Face ID. Success means sign-ins per week drop by 50%.";
    const res = await call("POST", "/api/intent/parse", { token: ws.token, body: { raw_input: raw, workspace_id: ws.workspaceId } });
    expect(res.status, res.text).toBe(200);
    const blocks = res.body.blocks as Omit<Block, "id" | "document_id">[];
    expect(blocks.map((b) => b.position)).toEqual(blocks.map((_, k) => k));
    const problem = blocks.find((b) => b.block_type === "problem");
    const solution = blocks.find((b) => b.block_type === "solution");
    expect(problem?.content.statement).toContain("logged out");
    expect(solution?.content.summary).toContain("remember-me");
    expect(blocks.find((b) => b.block_type === "metrics")?.content.metrics[0]).toMatchObject({ target: expect.stringContaining("50%") });

    // Text stating neither still gets both, empty, for the user to fill in.
    const vague = await call("POST", "/api/intent/parse", { token: ws.token, body: { raw_input: "Hello there." } });
    expect(vague.status, vague.text).toBe(200);
    const vt = vague.body.blocks.map((b: Block) => b.block_type);
    expect(vt).toEqual(expect.arrayContaining(["problem", "solution"]));
    expectEnvelope(await call("POST", "/api/intent/parse", { token: ws.token, body: { raw_input: "  " } }), 422, "VALIDATION_ERROR");
    expectEnvelope(await call("POST", "/api/intent/parse", { token: outsider, body: { raw_input: raw, workspace_id: ws.workspaceId } }), 403, "FORBIDDEN");
  });
});

describe("block actions: expand, challenge, simulate", () => {
  let doc: string;
  let blocks: Block[];

  beforeAll(async () => {
    // Twelve sections; the sixth (position 5) is the problem the actions work on.
    const sections = Array.from({ length: 12 }, (_, k) =>
      k === 5 ? "## Problem\n\nVeterans keep getting logged out of the app and have to sign in again.\n" : `## Section ${k + 1}\n\nParagraph number ${k + 1} of the document.\n`,
    );
    doc = await newDoc(`# Actions\n\n${sections.join("\n")}`);
    const res = await call("POST", "/api/blocks/extract", { token: ws.token, body: { workspace_id: ws.workspaceId, document_id: doc } });
    expect(res.status, res.text).toBe(200);
    blocks = res.body.blocks;
    expect(blocks).toHaveLength(12);
    expect(blocks[5]!.block_type).toBe("problem");
  });

  const act = (action: string, blockId: string, token = ws.token) => call("POST", `/api/blocks/${blockId}/${action}`, { token });
  const positionsOf = (ids: string[]) => ids.map((id) => blocks.find((b) => b.id === id)!.position);

  it("each action answers its shape with the 8 nearest blocks by position as context, and stores nothing", async () => {
    const target = blocks[5]!;
    const [expand, challenge, simulate] = await Promise.all(["expand", "challenge", "simulate"].map((a) => act(a, target.id)));
    for (const [name, res] of [["expand", expand], ["challenge", challenge], ["simulate", simulate]] as const) {
      expect(res!.status, `${name}: ${res!.text}`).toBe(200);
      expect(res!.body).toMatchObject({ block_id: target.id, block_type: "problem", action: name });
      expect(res!.body.context_block_ids).toHaveLength(8);
      expect(positionsOf(res!.body.context_block_ids)).toEqual([1, 2, 3, 4, 6, 7, 8, 9]);
    }
    expect(expand!.body).toMatchObject({ title: expect.any(String), content: expect.any(Object) });
    expect(Array.isArray(expand!.body.added)).toBe(true);
    expect(typeof expand!.body.content.statement).toBe("string");
    for (const k of ["strengths", "weaknesses", "questions", "suggestions"]) {
      expect(Array.isArray(challenge!.body[k]), k).toBe(true);
      for (const s of challenge!.body[k]) expect(typeof s).toBe("string");
    }
    expect(challenge!.body.weaknesses.length + challenge!.body.questions.length).toBeGreaterThan(0);
    expect(simulate!.body.scenarios.length).toBeGreaterThan(0);
    for (const s of simulate!.body.scenarios) {
      expect(s).toMatchObject({ name: expect.any(String), description: expect.any(String), consequences: expect.any(Array) });
      expect(["low", "medium", "high"]).toContain(s.likelihood);
    }
    expect(Array.isArray(simulate!.body.assumptions)).toBe(true);
    expect(Array.isArray(simulate!.body.signals_to_watch)).toBe(true);

    // A proposal only: the blocks are as they were.
    const after = await listed(doc);
    expect(after.map((b) => [b.id, b.content])).toEqual(blocks.map((b) => [b.id, b.content]));
    const runs = (await runsOf(ws.workspaceId)).filter((r) => r.agent_type === "block_action" && (r.input_data as { block_id: string }).block_id === target.id);
    expect(runs.map((r) => r.tool_name).sort()).toEqual(["challenge_block", "expand_block", "simulate_block"]);
  });

  it("at the edges the context is the 8 nearest on the one side", async () => {
    const [head, tail] = await Promise.all([act("challenge", blocks[0]!.id), act("challenge", blocks[11]!.id)]);
    expect(head.status, head.text).toBe(200);
    expect(positionsOf(head.body.context_block_ids)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(positionsOf(tail.body.context_block_ids)).toEqual([3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it("refuses a non-member and an unknown block alike (404)", async () => {
    expectEnvelope(await act("expand", blocks[5]!.id, outsider), 404, "NOT_FOUND");
    expectEnvelope(await act("simulate", randomUUID()), 404, "NOT_FOUND");
  });
});

describe("block annotations", () => {
  it("lists, creates and deletes annotations; the author or an owner/admin may delete, another member may not", async () => {
    // The trial plan allows 3 members: the owner, Alice and Bob (Bob is made admin later).
    const { owner, workspace } = await newWorkspace("Review");
    const [alice, bob] = await Promise.all([newUser({ name: "Alice" }), newUser({ name: "Bob" })]);
    for (const u of [alice, bob]) {
      const res = await call("POST", `/api/workspaces/${workspace.id}/members`, { token: owner.token, body: { email: u.email, role: "member" } });
      expect(res.status, res.text).toBe(201);
    }
    const doc = await newDoc("# Review\n", owner.token, workspace.id);
    const block = (await call("POST", blocksPath(doc), { token: owner.token, body: { block_type: "problem" } })).body as Block;
    const notes = `${blocksPath(doc)}/${block.id}/annotations`;
    const annotate = (token: string, body: Record<string, unknown>) => call("POST", notes, { token, body });

    const a1 = await annotate(alice.token, { body: "Which users?", kind: "question" });
    expect(a1.status, a1.text).toBe(201);
    expect(a1.body).toMatchObject({ block_id: block.id, document_id: doc, body: "Which users?", kind: "question", author_id: alice.id });
    const a2 = await annotate(alice.token, { body: "Looks right" });
    expect(a2.body.kind).toBe("comment");
    const a3 = await annotate(bob.token, { body: "Add the survey numbers", kind: "suggestion" });
    const a4 = await annotate(bob.token, { body: "Approved", kind: "approval" });
    for (const body of [{ body: "" }, { body: "x", kind: "shout" }, { text: "x" }]) expectEnvelope(await annotate(alice.token, body), 422, "VALIDATION_ERROR");

    const list = await call("GET", notes, { token: bob.token });
    expect(list.status, list.text).toBe(200);
    expect(list.body.total).toBe(4);
    expect(list.body.annotations.map((a: { id: string }) => a.id)).toEqual([a1.body.id, a2.body.id, a3.body.id, a4.body.id]);

    const del = (token: string, id: string) => call("DELETE", `${notes}/${id}`, { token });
    // Another member may not delete Alice's annotations; Alice may; the owner may delete anyone's.
    expectEnvelope(await del(bob.token, a1.body.id), 403, "FORBIDDEN");
    expectEnvelope(await del(alice.token, a3.body.id), 403, "FORBIDDEN");
    expect((await del(alice.token, a1.body.id)).status).toBe(204);
    expect((await del(owner.token, a3.body.id)).status).toBe(204);
    expect((await del(bob.token, a4.body.id)).status).toBe(204);
    expectEnvelope(await del(alice.token, a1.body.id), 404, "NOT_FOUND");
    // Once an admin, Bob may delete Alice's annotation.
    const promoted = await call("PATCH", `/api/workspaces/${workspace.id}/members/${bob.id}`, { token: owner.token, body: { role: "admin" } });
    expect(promoted.status, promoted.text).toBe(200);
    expect((await del(bob.token, a2.body.id)).status).toBe(204);
    expect((await call("GET", notes, { token: alice.token })).body).toEqual({ annotations: [], total: 0 });

    expectEnvelope(await call("GET", notes, { token: outsider }), 404, "NOT_FOUND");
    expectEnvelope(await annotate(outsider, { body: "hi" }), 404, "NOT_FOUND");
    expectEnvelope(await call("GET", `${blocksPath(doc)}/${randomUUID()}/annotations`, { token: owner.token }), 404, "NOT_FOUND");

    // Deleting a block removes its annotations with it.
    await annotate(alice.token, { body: "Still here?" });
    expect((await call("DELETE", `${blocksPath(doc)}/${block.id}`, { token: owner.token })).status).toBe(204);
    const left = (await partitionItems(`ws#${workspace.id}`)).filter((i) => String(i.sk).startsWith(`document#${doc}#note#`));
    expect(left).toEqual([]);
  });
});

describe("an extraction's mark on the document (extracting_until)", () => {
  it("refuses block creates while it is live (409) and lets them through once it has lapsed (a crashed extraction)", async () => {
    const docId = await newDoc();
    const mark = (until: number) => db().entities.document.patch({ workspace_id: ws.workspaceId, id: docId }).set({ extracting_until: until }).go();
    await mark(Date.now() + 60_000);
    expectEnvelope(await addBlock(docId, { block_type: "free_text", title: "during" }), 409, "CONFLICT");
    expect(await listed(docId)).toEqual([]);
    await mark(Date.now() - 1);
    expect((await addBlock(docId, { block_type: "free_text", title: "after" })).status).toBe(201);
    // An extraction then sets its own mark over the lapsed one and clears it when done.
    const res = await call("POST", "/api/blocks/extract", { token: ws.token, body: { workspace_id: ws.workspaceId, document_id: docId } });
    expect(res.status, res.text.slice(0, 300)).toBe(200);
    const { data } = await db().entities.document.get({ workspace_id: ws.workspaceId, id: docId }).go({ consistent: true });
    expect(data!.extracting_until).toBeUndefined();
    expect((await addBlock(docId, { block_type: "free_text", title: "later" })).status).toBe(201);
  });
});
