/**
 * The harness around the copilot on the local engine (issue #21), over the wire: the real stream handler through the
 * local gateway, read by a real SSE client, against DynamoDB Local and the local object store.
 *
 * - a complex request becomes a mission whose independent subtasks run as parallel threads and finish, in an order
 *   the stream's state machine accepts (test/support/sse.ts `orderProblems`); its draft waits as a pending action of
 *   the mission's batch, approved with the batch;
 * - a draft that breaks its contract (a PRD told to leave out its Solution) is repaired by the engine and reported;
 * - a run whose quote was altered in the table fails the independent verifier, is repaired, and passes;
 * - what the engine cannot repair ends degraded; every judged run stores its RQS;
 * - a document DynamoDB leaves unprocessed in the contract's batch read is read again, or the run is an error;
 * - a member's edit (or deletion) of a document while a repair redrafts it wins: the repair is dropped and said so,
 *   and the run's answer, turns and charge stand;
 * - max_turns is one budget for the query: the first run, its repairs and a mission's threads share it, and `turn`
 *   counts up across them.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { db } from "../../core/db/service";
import { localDocumentEngine } from "../../core/document/engine";
import { asChange } from "../../core/insight/search-index";
import { runsOf } from "../../core/agent";
import { call, newWorkspace, type ApiResponse } from "../support/api";
import { insightQuoting, notesAsSources } from "../support/sources";
import { liveGateway, orderProblems, readStream, type WireEvent } from "../support/sse";
import { withholdBatchKeys } from "../support/throttle";
import { currentSignal } from "../../core/context";
import { QUERY_BUDGET_MS } from "../../core/agent/loop";

let gw: Awaited<ReturnType<typeof liveGateway>>;

const of = (events: WireEvent[], name: string) => events.filter((e) => e.event === name).map((e) => e.data);
const text = (events: WireEvent[]) => events.filter((e) => e.event === "token").map((e) => e.data.content).join("");

const NOTES = {
  "ana-interview.md": "# Interview with Ana\n\nI keep getting sent back to the login screen after every update. It is maddening.\n\nI could not find where to upload a prescription, so I called the pharmacy instead.\n",
  "sam-interview.md": "# Interview with Sam\n\nI work offline on home visits and my notes disappear when the signal comes back.\n\nThe app signs me out in the middle of a visit and I lose what I typed.\n",
};

/** A workspace with two interview notes, two grounded insights (verbatim quotes) and a recommendation on them. */
async function seeded(name: string) {
  const w = await newWorkspace(name);
  const token = w.owner.token;
  const ws = w.workspace.id;
  const sources = await notesAsSources(token, ws, NOTES);
  const insight = (title: string, quote: string, file: string, severity: string) => insightQuoting(token, ws, { title, quote, sourceId: sources[file]!, severity });
  const signIn = await insight("Users keep getting sent back to the login screen", "I keep getting sent back to the login screen after every update", "ana-interview.md", "high");
  const offline = await insight("Notes disappear when the signal comes back", "my notes disappear when the signal comes back", "sam-interview.md", "medium");
  const rec = await call("POST", "/api/recommendations", { token, body: { workspace_id: ws, title: "Keep users signed in across updates", description: "Keep the session across app updates.", addresses_insight_ids: [signIn] } });
  expect(rec.status, rec.text).toBe(201);
  return { token, ws, owner: w.owner, sources, insights: { signIn, offline }, recommendation: rec.body.id as string };
}

beforeAll(async () => {
  gw = await liveGateway();
});
afterAll(async () => gw.close());

describe("a complex request becomes a mission (local engine)", () => {
  it("plans, runs independent subtasks as parallel threads, composes the answer, judges it and batches the mission's writes", async () => {
    const s = await seeded("Mission");
    const prompt = "What do users struggle with? Which interviews do we have? Draft a PRD for the sign-in fix.";
    const events = await readStream(gw.base, "/api/stream/chat", s.token, { workspace_id: s.ws, prompt });

    expect(orderProblems(events)).toEqual([]);
    expect(of(events, "harness_complexity")[0]).toMatchObject({ level: "complex", subtask_count: 3 });
    expect(of(events, "harness_workspace_profile")[0]).toMatchObject({ maturity: "delivering", source_count: 2, insight_count: 2, recommendation_count: 1, historical_quality: { runs_judged: 0, avg_rqs: null } });
    const [selected] = of(events, "harness_plan_selected");
    expect(selected.plan).toMatchObject({ plan_id: "parallel", suggested_workflow: "mission" });
    expect(Object.keys(selected.plan).sort()).toEqual(["description", "estimated_turns", "plan_id", "prompt_modifier", "rationale", "subtasks", "suggested_workflow", "title"]);
    expect(selected.score).toMatchObject({ coverage: 1, efficiency: 1, feasibility: 1, alignment: 1 });
    const [mission] = of(events, "mission_proposed");
    expect(mission.subtasks.map((t: { title: string; workflow_type: string; depends_on: number[] }) => [t.title, t.workflow_type, t.depends_on])).toEqual([
      ["What do users struggle with?", "research", []],
      ["Which interviews do we have?", "research", []],
      ["Draft a PRD for the sign-in fix.", "drafting", []],
    ]);
    expect(mission).toMatchObject({ agent_count: 3, parallel_count: 3 });

    // The three threads ran at once: all started before the first finished.
    const starts = events.map((e, i) => (e.event === "harness_subtask_start" ? i : -1)).filter((i) => i >= 0);
    const firstDone = events.findIndex((e) => e.event === "harness_subtask_done");
    expect(starts).toHaveLength(3);
    expect(starts.every((i) => i < firstDone)).toBe(true);
    expect(of(events, "harness_subtask_start").every((d) => d.parallel === true)).toBe(true);
    expect(of(events, "agent_thread_done").map((d) => d.subtask_index).sort()).toEqual([0, 1, 2]);
    const toolsBy = (k: number) => of(events, "tool_use").filter((t) => t.subtask_index === k).map((t) => t.name);
    expect([toolsBy(0), toolsBy(1), toolsBy(2)]).toEqual([["search_insights"], ["list_sources"], ["list_recommendations", "draft_document"]]);

    // One answer, in subtask order, from what each thread found.
    const answer = text(events);
    expect(answer.indexOf("### 1. What do users struggle with?")).toBeLessThan(answer.indexOf("### 2. Which interviews do we have?"));
    expect(answer).toContain(`[insight ${s.insights.signIn}]`);
    expect(answer).toContain(`[source ${s.sources["ana-interview.md"]}]`);
    expect(of(events, "harness_contract")).toEqual([expect.objectContaining({ passed: true, workflow_type: "mission", issues: [] })]);
    expect(of(events, "harness_verifier")).toEqual([expect.objectContaining({ passed: true, issues: [] })]);
    expect(of(events, "harness_verifier")[0].claims).toBeGreaterThan(5);
    expect(of(events, "validation_sync")[0]).toMatchObject({ citations: { unresolved: [] } });
    const metrics = of(events, "context_metrics")[0];
    expect(metrics.tool_results).toBe(4);
    expect(metrics.tool_result_chars).toBeGreaterThan(0);
    // The workspace's first successful run earns the trial's first_run milestone.
    expect(of(events, "milestone_unlocked")).toEqual([expect.objectContaining({ milestone: "first_run", credits_granted: 5 })]);
    const done = events.at(-1)!.data;
    expect(done.mission_id).toBe(mission.mission_id);
    expect(done.tool_count).toBe(4);

    // The draft waits as a pending action of the mission, in the batch {missionId}:{toolName}.
    const queued = of(events, "tool_result").find((r) => r.name === "draft_document")!;
    const pa = await call("GET", `/api/pending-actions/${queued.pending_action_id}`, { token: s.token });
    expect(pa.body).toMatchObject({ missionId: mission.mission_id, batchId: `${mission.mission_id}:draft_document`, status: "pending" });
    const batch = await call("POST", `/api/pending-actions/batch/${encodeURIComponent(pa.body.batchId)}/approve`, { token: s.token, body: { items: [{ pendingActionId: pa.body.id }] } });
    expect(batch.body).toMatchObject({ approved: 1, rejected: 0, skipped: 0 });

    const run = (await runsOf(s.ws)).find((r) => r.agent_type === "chat")!;
    expect(run).toMatchObject({ contract_passed: true, verifier_passed: true, quality: { workflow_type: "mission", retries: 0, degraded: false, mission_id: mission.mission_id } });
    expect(run.rqs).toBeGreaterThanOrEqual(70);
    expect(Object.keys(run.quality as object).sort()).toEqual(["contract", "degraded", "grounding", "mission_id", "retries", "verifier", "workflow_type"]);
  }, 120_000);
});

describe("statements of context are not requests (local engine)", () => {
  it("an introduction plus one question is one simple run that answers the question, with no error", async () => {
    const s = await seeded("Introduction");
    const prompt = "Hi! I'm the PM of Acme. We use Mixpanel for analytics. What do users struggle with?";
    const events = await readStream(gw.base, "/api/stream/chat", s.token, { workspace_id: s.ws, prompt });

    expect(orderProblems(events)).toEqual([]);
    expect(of(events, "error")).toEqual([]);
    expect(of(events, "harness_complexity")[0]).toEqual({ level: "simple", reason: "One research request (and 2 statements of context)", subtask_count: 0 });
    expect(of(events, "mission_proposed")).toEqual([]);
    // The engine plans on the question alone: the statements do not pull the search off topic.
    expect(of(events, "tool_use").map((t) => [t.name, JSON.parse(t.input_summary).query])).toEqual([["search_insights", "What do users struggle with?"]]);
    expect(text(events)).toContain(`[insight ${s.insights.signIn}]`);
    expect(of(events, "harness_contract")).toEqual([expect.objectContaining({ passed: true, workflow_type: "chat" })]);
    expect(events.at(-1)!.event).toBe("done");
  }, 120_000);
});

describe("post-flight repairs (local engine)", () => {
  let s: Awaited<ReturnType<typeof seeded>>;
  beforeAll(async () => {
    s = await seeded("Repairs");
  }, 120_000);

  it("a PRD drafted without its Solution breaks the contract; the engine drafts it again with the section, and says so", async () => {
    const events = await readStream(gw.base, "/api/stream/draft", s.token, {
      workspace_id: s.ws,
      prompt: "Draft a PRD",
      recommendation_id: s.recommendation,
      user_instructions: "Keep it short, without a solution section.",
    });

    expect(orderProblems(events)).toEqual([]);
    expect(of(events, "harness_complexity")[0]).toMatchObject({ level: "simple", subtask_count: 0 });
    const [first, second] = of(events, "harness_contract");
    expect(first).toMatchObject({ passed: false, workflow_type: "drafting" });
    const docId = of(events, "creation")[0].ids[0];
    expect(first.issues).toEqual([`Document (${docId}) lacks the required section "Solution"`]);
    const [retry] = of(events, "harness_retry");
    expect(retry).toMatchObject({ kind: "quality", attempt: 2, rewrites_answer: false });
    expect(retry.rqs).toBeLessThan(70);
    expect(retry.repairs).toEqual([`drafted document ${docId} again with the required section "Solution"`]);
    expect(second).toMatchObject({ passed: true, issues: [] });
    expect(of(events, "harness_degraded")).toEqual([]);

    const doc = await call("GET", `/api/documents/${docId}`, { token: s.token });
    expect(doc.body.content).toMatch(/^## Solution$/m);
    expect(doc.body.content).toContain("Include a Solution section.");
    const revisions = await call("GET", `/api/documents/${docId}/versions`, { token: s.token });
    expect(JSON.stringify(revisions.body)).toContain('Quality repair: drafted again with the required section \\"Solution\\"');
    const run = (await runsOf(s.ws)).find((r) => r.agent_type === "drafting" && r.tool_name === "agent_loop")!;
    expect(run).toMatchObject({ contract_passed: true, verifier_passed: true, quality: { workflow_type: "drafting", retries: 1, degraded: false } });
  }, 120_000);

  it("a quote altered in the table fails the verifier, which re-reads the sources; the engine drops it and the answer passes", async () => {
    // The stored quote no longer matches the interview (as an edit by hand or a faulty engine would leave it).
    const { data } = await db().entities.insight.get({ workspace_id: s.ws, id: s.insights.offline }).go();
    const altered = "my notes vanish whenever the signal comes back";
    // Written as every insight write of the service is, as one change of the search snapshot (whose rows search shows).
    await asChange(s.ws, [s.insights.offline], () => db().entities.insight.patch({ workspace_id: s.ws, id: s.insights.offline }).set({ quotes: [{ ...data!.quotes![0]!, text: altered }] }).go());

    const events = await readStream(gw.base, "/api/stream/chat", s.token, { workspace_id: s.ws, prompt: "What do users struggle with when their notes disappear?" });

    expect(orderProblems(events)).toEqual([]);
    const [failed, passed] = of(events, "harness_verifier");
    expect(failed.passed).toBe(false);
    expect(failed.issues).toEqual([`“${altered}” is not verbatim in source ${s.sources["sam-interview.md"]}`]);
    expect(of(events, "harness_retry").filter((r) => r.kind === "quality")).toEqual([expect.objectContaining({ attempt: 2, rewrites_answer: true, issues: failed.issues })]);
    expect(passed).toMatchObject({ passed: true, issues: [] });
    // The stream carries both attempts: the first quoted it, the repaired one (after harness_retry) does not.
    const retryAt = events.findIndex((e) => e.event === "harness_retry");
    expect(text(events.slice(0, retryAt))).toContain(altered);
    const repaired = text(events.slice(retryAt));
    expect(repaired).not.toContain(altered);
    expect(repaired).toContain("Corrected after a quality check: removed 1 quote that is not verbatim in its source.");

    const conv = await call("GET", `/api/chat/conversations/${events.at(-1)!.data.conversation_id}`, { token: s.token });
    const answer = conv.body.messages.at(-1).content as string;
    expect(answer).not.toContain(altered);
    expect(answer).toContain(`[insight ${s.insights.offline}]`);
    const run = (await runsOf(s.ws)).find((r) => (r.input_data as { conversation_id?: string }).conversation_id === conv.body.id)!;
    expect(run).toMatchObject({ verifier_passed: true, quality: { retries: 1, degraded: false, workflow_type: "chat" } });
  }, 120_000);

  it("what the engine cannot repair ends degraded: an insight queued without a quote of any source", async () => {
    const events = await readStream(gw.base, "/api/stream/chat", s.token, { workspace_id: s.ws, prompt: 'Create an insight "Exports are hard to find"' });

    expect(orderProblems(events)).toEqual([]);
    const issue = 'Insight "Exports are hard to find" carries no verbatim quote of a source';
    expect(of(events, "harness_contract").map((c) => [c.passed, c.issues])).toEqual([[false, [issue]], [false, [issue]], [false, [issue]]]);
    // The request names the failed write; the local engine cannot quote a source for it, and says so.
    expect(of(events, "harness_retry").map((r) => [r.attempt, r.issues])).toEqual([[2, [issue]], [3, [issue]]]);
    expect(text(events)).toContain("Checked again: nothing in this answer could be corrected from the results I have.");
    const [degraded] = of(events, "harness_degraded");
    expect(degraded).toMatchObject({ attempts: 3, reason: "2 repairs did not reach the quality threshold", issues: [issue] });
    const run = (await runsOf(s.ws)).find((r) => (r.input_data as { conversation_id?: string }).conversation_id === events.at(-1)!.data.conversation_id)!;
    expect(run).toMatchObject({ contract_passed: false, verifier_passed: true, quality: { degraded: true, retries: 2 } });
    expect(run.rqs).toBeLessThanOrEqual(69);
  }, 120_000);
});

describe("the contract's read of the stored artifacts under throttling (local engine)", () => {
  let s: Awaited<ReturnType<typeof seeded>>;
  beforeAll(async () => {
    s = await seeded("Throttled contract");
  }, 120_000);
  const draft = () =>
    readStream(gw.base, "/api/stream/draft", s.token, { workspace_id: s.ws, prompt: "Draft a PRD", recommendation_id: s.recommendation, user_instructions: "Keep it short, without a solution section." });

  it("a document DynamoDB leaves unprocessed is read again and judged, never passed unseen; unread through every try, the run is an error", async () => {
    // The drafted document's key (its id is not known before the run), in the batch reads of this workspace.
    const documentKey = `ws#${s.ws}","sk":"document#`;
    // Left unprocessed once: the contract's read asks again and judges the document (it lacks its Solution).
    const once = withholdBatchKeys(documentKey, 1);
    let events: WireEvent[];
    try {
      events = await draft();
    } finally {
      once.remove();
    }
    expect(once.withheld()).toBe(1);
    const docId = of(events, "creation")[0].ids[0];
    expect(of(events, "harness_contract")[0]).toMatchObject({ passed: false, issues: [`Document (${docId}) lacks the required section "Solution"`] });

    // Left unprocessed on every try: no verdict, so no pass: the run ends in a 503 error.
    const always = withholdBatchKeys(documentKey, 100);
    try {
      events = await draft();
    } finally {
      always.remove();
    }
    expect(of(events, "harness_contract")).toEqual([]);
    expect(of(events, "error")).toEqual([expect.objectContaining({ code: "SERVICE_UNAVAILABLE" })]);
    // The answer was finished and streamed before the check failed: the conversation keeps it, not a stop notice.
    const streamed = text(events);
    expect(streamed.trim()).not.toBe("");
    const conv = await call("GET", `/api/chat/conversations/${events.at(-1)!.data.conversation_id}`, { token: s.token });
    const stored = conv.body.messages.at(-1);
    expect(stored.role).toBe("assistant");
    expect(stored.content).not.toMatch(/^I could not finish/);
    expect(streamed).toContain(stored.content.trim());
  }, 120_000);
});

describe("a member's change during a repair's redraft wins (local engine)", () => {
  const MEMBER_TEXT = "# Sign-in fix\n\nThe member's own rewrite, made while the copilot was still answering.\n";

  /**
   * A draft stream whose PRD lacks its Solution (the repair redrafts it), with `meanwhile` run on the drafted document
   * while the engine redrafts: between the repair's read of the document and its save.
   */
  async function draftWith(s: Awaited<ReturnType<typeof seeded>>, meanwhile: (docId: string) => Promise<void>) {
    const original = localDocumentEngine.draft;
    let ran = false;
    const spy = vi.spyOn(localDocumentEngine, "draft").mockImplementation(async (input) => {
      const out = await original(input);
      // The repair's redraft, recognised by the instruction it adds (the stream's own draft has none).
      if (!ran && input.user_instructions?.includes("Include a Solution section.")) {
        ran = true;
        const { data } = await db().entities.document.query.byWorkspace({ workspace_id: s.ws }).go();
        expect(data).toHaveLength(1);
        await meanwhile(data[0]!.id);
      }
      return out;
    });
    try {
      const events = await readStream(gw.base, "/api/stream/draft", s.token, { workspace_id: s.ws, prompt: "Draft a PRD", recommendation_id: s.recommendation, user_instructions: "Keep it short, without a solution section." });
      expect(ran).toBe(true);
      return events;
    } finally {
      spy.mockRestore();
    }
  }

  /** What stands whatever the repair met: no error, the streamed answer stored, turns and credits as the run spent them. */
  async function answerStands(s: Awaited<ReturnType<typeof seeded>>, events: WireEvent[]) {
    expect(orderProblems(events)).toEqual([]);
    expect(of(events, "error")).toEqual([]);
    const done = events.at(-1)!.data;
    expect(done.num_turns).toBeGreaterThan(0);
    expect(done.credits).toBeGreaterThan(0);
    const conv = await call("GET", `/api/chat/conversations/${done.conversation_id}`, { token: s.token });
    const answer = conv.body.messages.at(-1).content as string;
    expect(answer).not.toMatch(/^I could not finish/);
    expect(answer.trim()).toBe(text(events).trim());
    const run = (await runsOf(s.ws)).find((r) => r.agent_type === "drafting" && r.tool_name === "agent_loop")!;
    expect(run).toMatchObject({ status: "success", contract_passed: false, quality: { workflow_type: "drafting", retries: 0, degraded: true } });
    expect(run.credits_charged).toBe(done.credits);
    return run;
  }

  it("an edit made while the repair redrafts stays: the repair is dropped and reported, the answer and its charge stand", async () => {
    const s = await seeded("Edit during repair");
    let patched: ApiResponse | undefined;
    const events = await draftWith(s, async (docId) => {
      patched = await call("PATCH", `/api/documents/${docId}`, { token: s.token, body: { content: MEMBER_TEXT } });
    });
    expect(patched!.status, patched!.text).toBe(200);
    expect(patched!.body.version).toBe(2);

    const docId = of(events, "creation")[0].ids[0];
    // The member's text is the document, at the version their edit made; no revision claims a repair.
    const doc = await call("GET", `/api/documents/${docId}`, { token: s.token });
    expect(doc.body).toMatchObject({ content: MEMBER_TEXT, version: 2 });
    const revisions = await call("GET", `/api/documents/${docId}/versions`, { token: s.token });
    expect(JSON.stringify(revisions.body)).not.toContain("Quality repair");
    const note = `document ${docId} was edited while it was drafted again; the member's change stands and the repair was dropped`;
    expect(of(events, "harness_retry").filter((r) => r.kind === "quality")).toEqual([]);
    expect(of(events, "harness_degraded")).toEqual([expect.objectContaining({ attempts: 1, abandoned: [note], reason: "A member changed what the repair was rewriting; their change stands" })]);
    const run = await answerStands(s, events);
    expect((run.quality as { abandoned_repairs?: string[] }).abandoned_repairs).toEqual([note]);
  }, 120_000);

  it("a document deleted while the repair redrafts stays deleted: the repair is dropped, not an error of the run", async () => {
    const s = await seeded("Delete during repair");
    let deleted: ApiResponse | undefined;
    const events = await draftWith(s, async (docId) => {
      deleted = await call("DELETE", `/api/documents/${docId}`, { token: s.token });
    });
    expect(deleted!.status, deleted!.text).toBeLessThan(300);

    const docId = of(events, "creation")[0].ids[0];
    const run = await answerStands(s, events);
    const note = `document ${docId} was deleted while it was drafted again; the member's change stands and the repair was dropped`;
    expect(of(events, "harness_degraded")).toEqual([expect.objectContaining({ abandoned: [note] })]);
    expect((await call("GET", `/api/documents/${docId}`, { token: s.token })).status).toBe(404);
    expect((run.quality as { abandoned_repairs?: string[] }).abandoned_repairs).toEqual([note]);
  }, 120_000);
});

describe("the query's budget runs out during a repair's redraft (local engine)", () => {
  it("the conversation keeps the finished answer the client saw, with error TIMEOUT and the run's turns (it stored a stop notice, 0 turns)", async () => {
    const s = await seeded("Budget during repair");
    let hanging = false;
    const original = localDocumentEngine.draft;
    // The stream's own draft runs; the repair's redraft (recognised by the instruction it adds) is a model call that
    // does not answer before the budget, and stops on the run's signal as a real one does.
    const spy = vi.spyOn(localDocumentEngine, "draft").mockImplementation(async (input) => {
      if (!input.user_instructions?.includes("Include a Solution section.")) return original(input);
      const signal = currentSignal()!;
      hanging = true;
      return new Promise<never>((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }));
    });
    let events: WireEvent[];
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"], shouldAdvanceTime: true });
    try {
      const reading = readStream(gw.base, "/api/stream/draft", s.token, { workspace_id: s.ws, prompt: "Draft a PRD", recommendation_id: s.recommendation, user_instructions: "Keep it short, without a solution section." }, { timeoutMs: 2 * QUERY_BUDGET_MS });
      await vi.waitFor(() => expect(hanging).toBe(true), { timeout: 60_000, interval: 20 });
      await vi.advanceTimersByTimeAsync(QUERY_BUDGET_MS);
      events = await reading;
    } finally {
      vi.useRealTimers();
      spy.mockRestore();
    }
    expect(of(events, "harness_contract")[0]).toMatchObject({ passed: false });
    expect(of(events, "error")).toEqual([{ code: "TIMEOUT", message: `The query ran past its ${QUERY_BUDGET_MS / 1000} s budget` }]);
    const streamed = text(events);
    expect(streamed.trim()).not.toBe("");
    const done = events.at(-1)!.data;
    expect(done.num_turns).toBeGreaterThan(0);
    const conv = await call("GET", `/api/chat/conversations/${done.conversation_id}`, { token: s.token });
    const stored = conv.body.messages.find((m: { id: string }) => m.id === done.message_id);
    expect(stored.role).toBe("assistant");
    expect(stored.content.trim()).toBe(streamed.trim());
  }, 120_000);
});

describe("max_turns is one budget per query (local engine)", () => {
  let s: Awaited<ReturnType<typeof seeded>>;
  beforeAll(async () => {
    s = await seeded("Turn budget");
  }, 120_000);
  const turns = (events: WireEvent[]) => of(events, "turn").map((t) => t.turn as number);
  const runOf = async (events: WireEvent[]) => (await runsOf(s.ws)).find((r) => (r.input_data as { conversation_id?: string }).conversation_id === events.at(-1)!.data.conversation_id)!;
  const issue = 'Insight "Exports are hard to find" carries no verbatim quote of a source';

  it("a repair gets the turns left; with none left there is no repair, and the run says the budget stopped it", async () => {
    // The first run takes 2 turns (the queued write, then the answer); the one turn left goes to one repair.
    const three = await readStream(gw.base, "/api/stream/chat", s.token, { workspace_id: s.ws, prompt: 'Create an insight "Exports are hard to find"', max_turns: 3 });
    expect(orderProblems(three)).toEqual([]);
    expect(turns(three)).toEqual([1, 2, 3]);
    expect(three.at(-1)!.data.num_turns).toBe(3);
    expect(of(three, "harness_retry").map((r) => [r.attempt, r.rewrites_answer])).toEqual([[2, true]]);
    expect(of(three, "harness_degraded")).toEqual([expect.objectContaining({ attempts: 2, turn_budget_spent: true, reason: "The query's 3 turns (max_turns) are used up: none is left to rewrite the answer", issues: [issue] })]);
    expect((await runOf(three)).quality).toMatchObject({ retries: 1, degraded: true, turn_budget_spent: true });

    // Nothing left after the first run: no repair at all.
    const two = await readStream(gw.base, "/api/stream/chat", s.token, { workspace_id: s.ws, prompt: 'Create an insight "Exports are hard to find"', max_turns: 2 });
    expect(orderProblems(two)).toEqual([]);
    expect(turns(two)).toEqual([1, 2]);
    expect(two.at(-1)!.data.num_turns).toBe(2);
    expect(of(two, "harness_retry").filter((r) => r.kind === "quality")).toEqual([]);
    expect(of(two, "harness_degraded")).toEqual([expect.objectContaining({ attempts: 1, turn_budget_spent: true })]);
    expect(of(two, "error")).toEqual([]);
    expect((await runOf(two)).quality).toMatchObject({ retries: 0, degraded: true, turn_budget_spent: true });
  }, 120_000);

  it("a mission's threads share the budget: the turns of all threads together stay within max_turns, numbered across them", async () => {
    // Three threads that need 2, 2 and 3 turns (7) under a budget of 5.
    const prompt = "What do users struggle with? Which interviews do we have? Draft a PRD for the sign-in fix.";
    const events = await readStream(gw.base, "/api/stream/chat", s.token, { workspace_id: s.ws, prompt, max_turns: 5 });
    expect(orderProblems(events)).toEqual([]);
    expect(of(events, "mission_proposed")).toHaveLength(1);
    expect(of(events, "agent_thread_done")).toHaveLength(3);
    expect(turns(events).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5]);
    expect(events.at(-1)!.data.num_turns).toBe(5);
    // A thread the budget cut short leaves the mission unfinished: not judged, charged as partial.
    expect(of(events, "harness_contract")).toEqual([]);
  }, 120_000);
});
