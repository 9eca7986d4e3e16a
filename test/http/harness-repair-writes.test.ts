/**
 * The harness's quality repair of stored insights and recommendations (core/harness/repair.ts `repairArtifacts`)
 * against DynamoDB Local, with the member's changes made through the real handlers:
 *
 * - an insight titled apart from its evidence is retitled from a sentence of its own quotes; a recommendation that
 *   names no insight is linked to the insights its words share;
 * - a member's change wins over the repair: made after the contract judged the artifact (the repair reads it changed),
 *   or between the repair's read and its write (the write is conditioned on the `updated_at` read). The repair is
 *   dropped and reported as abandoned, and the member's change stands.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { repairArtifacts } from "../../core/harness/repair";
import type { ContractFailure, ContractResult } from "../../core/harness/contract";
import type { VerifierResult } from "../../core/harness/verifier";
import { call, newWorkspace } from "../support/api";
import { insightQuoting, notesAsSources } from "../support/sources";
import { deletedBeforeUpdate } from "../support/races";

const NOTES = { "ana-interview.md": "# Interview with Ana\n\nI keep getting sent back to the login screen after every update. It is maddening.\n" };
const QUOTE = "I keep getting sent back to the login screen after every update";
const OFF_TITLE = "Pricing page colours feel dated";
const EVIDENCE_TITLE = "I keep getting sent back to the login screen after every update";
const MEMBER_TITLE = "Members are signed out by every app update";

const judged = (failures: ContractFailure[]): ContractResult => ({ passed: false, score: 0.5, issues: failures.map((f) => f.kind), workflow_type: "chat", failures, checks: 4 });
const NO_VERIFIER: VerifierResult = { passed: true, issues: [], failures: [] } as unknown as VerifierResult;

let s: { token: string; ws: string; userId: string; sourceId: string };
beforeAll(async () => {
  const w = await newWorkspace("Repair writes");
  const token = w.owner.token;
  const sources = await notesAsSources(token, w.workspace.id, NOTES);
  const me = await call("GET", "/api/auth/me", { token });
  s = { token, ws: w.workspace.id, userId: me.body.id, sourceId: sources["ana-interview.md"]! };
}, 120_000);

/** An insight whose title is not drawn from its one verbatim quote, as the contract would judge it. */
async function offTitleInsight() {
  const id = await insightQuoting(s.token, s.ws, { title: OFF_TITLE, quote: QUOTE, sourceId: s.sourceId, severity: "high" });
  return { id, failure: { kind: "title_not_from_evidence", target: id, title: OFF_TITLE } as ContractFailure };
}

/** A recommendation naming no insight, with words an insight shares. */
async function unlinkedRecommendation() {
  const rec = await call("POST", "/api/recommendations", { token: s.token, body: { workspace_id: s.ws, title: "Keep the login screen away after every update", description: "Users are sent back to the login screen." } });
  expect(rec.status, rec.text).toBe(201);
  expect(rec.body.addresses_insight_ids).toEqual([]);
  return { id: rec.body.id as string, failure: { kind: "names_no_insight", target: rec.body.id } as ContractFailure };
}

const titleOf = async (id: string) => (await call("GET", `/api/insights/${id}`, { token: s.token })).body.title as string;
const linksOf = async (id: string) => (await call("GET", `/api/recommendations/${id}`, { token: s.token })).body.addresses_insight_ids as string[];

describe("the repair of an insight's title", () => {
  it("retitles an insight from a sentence of its own quotes", async () => {
    const { id, failure } = await offTitleInsight();
    const out = await repairArtifacts(s.userId, s.ws, judged([failure]), NO_VERIFIER);
    expect(out.fixed).toEqual([`retitled insight ${id} from its evidence: "${OFF_TITLE}" → "${EVIDENCE_TITLE}"`]);
    expect(out.abandoned).toEqual([]);
    expect(await titleOf(id)).toBe(EVIDENCE_TITLE);
  }, 60_000);

  it("a member's retitle between the repair's read and its write stands; the repair is abandoned", async () => {
    const { id, failure } = await offTitleInsight();
    const out = await deletedBeforeUpdate(
      `insight#${id}`,
      () => call("PATCH", `/api/insights/${id}`, { token: s.token, body: { title: MEMBER_TITLE } }),
      () => repairArtifacts(s.userId, s.ws, judged([failure]), NO_VERIFIER),
    );
    expect(out.fixed).toEqual([]);
    expect(out.abandoned).toEqual([{ target: id, note: `insight ${id} was changed while it was retitled; the member's change stands and the repair was dropped` }]);
    expect(await titleOf(id)).toBe(MEMBER_TITLE);
  }, 60_000);

  it("a member's retitle after the contract judged the insight stands: the repair does not judge it again", async () => {
    const { id, failure } = await offTitleInsight();
    expect((await call("PATCH", `/api/insights/${id}`, { token: s.token, body: { title: MEMBER_TITLE } })).status).toBe(200);
    const out = await repairArtifacts(s.userId, s.ws, judged([failure]), NO_VERIFIER);
    expect(out.abandoned).toEqual([{ target: id, note: `insight ${id} was retitled after it was judged; the member's change stands and the repair was dropped` }]);
    expect(await titleOf(id)).toBe(MEMBER_TITLE);
  }, 60_000);
});

describe("the repair of a recommendation that names no insight", () => {
  let insightId: string;
  beforeAll(async () => {
    insightId = await insightQuoting(s.token, s.ws, { title: "Users are sent back to the login screen after every update", quote: QUOTE, sourceId: s.sourceId, severity: "high" });
  }, 60_000);

  it("links it to the insights its words share", async () => {
    const { id, failure } = await unlinkedRecommendation();
    const out = await repairArtifacts(s.userId, s.ws, judged([failure]), NO_VERIFIER);
    expect(out.abandoned).toEqual([]);
    expect(out.fixed).toHaveLength(1);
    expect(await linksOf(id)).toContain(insightId);
  }, 60_000);

  it("a member's change between the repair's read and its write stands; the repair is abandoned", async () => {
    const { id, failure } = await unlinkedRecommendation();
    const other = await insightQuoting(s.token, s.ws, { title: "Chosen by the member", quote: QUOTE, sourceId: s.sourceId, severity: "low" });
    const out = await deletedBeforeUpdate(
      `recommendation#${id}`,
      () => call("PATCH", `/api/recommendations/${id}`, { token: s.token, body: { title: "Renamed by the member" } }),
      () => repairArtifacts(s.userId, s.ws, judged([failure]), NO_VERIFIER),
    );
    expect(out.fixed).toEqual([]);
    expect(out.abandoned).toEqual([{ target: id, note: `recommendation ${id} was changed while it was linked; the member's change stands and the repair was dropped` }]);
    const rec = (await call("GET", `/api/recommendations/${id}`, { token: s.token })).body;
    expect(rec).toMatchObject({ title: "Renamed by the member", addresses_insight_ids: [] });

    // Linked by the member after the judgement: the repair leaves their links alone.
    expect((await call("PATCH", `/api/recommendations/${id}`, { token: s.token, body: { addresses_insight_ids: [other] } })).status).toBe(200);
    const again = await repairArtifacts(s.userId, s.ws, judged([failure]), NO_VERIFIER);
    expect(again.abandoned).toEqual([{ target: id, note: `recommendation ${id} was linked after it was judged; the member's change stands and the repair was dropped` }]);
    expect(await linksOf(id)).toEqual([other]);
  }, 60_000);
});
