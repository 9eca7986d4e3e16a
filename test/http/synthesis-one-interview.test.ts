/**
 * One participant (issue #11 item 1): a single interview uploaded alone yields insights through the public API.
 * The P16 transcript of ../shared/realdata/va-mobile-app (a 64-minute WebVTT recording, interviewer "Perigean" and
 * participant "P16") goes through upload, extraction and the Index step (MENTION_INDEXING on), then
 * `POST /api/research/synthesize` on that one source. Before issue #11 this gave 0 insights ("No recurring theme had
 * enough support"): every theme needed two voices.
 *
 * Asserted: at least 3 insights; every quote verbatim in the extracted text and attributed to P16 (never the
 * interviewer, never a line of metadata); each insight says it is one participant's, in how many passages.
 *
 * The same for each retention-study interview note of that folder (Markdown notes of 19–26 participant sentences:
 * a conversation guide whose bullets hold the interviewer's question and the participant's answer after it). Each
 * alone yields at least 3 insights, and every quote is the participant's answer: a verbatim span of the note that
 * is none of the guide's questions, none of its script or metadata, and not background (service history, phone).
 */
import { beforeAll, describe, expect, it } from "vitest";
import { db } from "../../core/db/service";
import { call, newWorkspace } from "../support/api";
import { realFile, uploadResearch, waitFor } from "../support/multipart";

process.env.MENTION_INDEXING = "on";

/**
 * Upload one real research file into a fresh workspace and wait until it is extracted (completed) and indexed.
 * @returns the owner's token, the workspace, the source and its extracted text.
 */
async function uploadIndexed(file: Awaited<ReturnType<typeof realFile>>, contentType: string, name: string) {
  const { owner, workspace } = await newWorkspace(name);
  const res = await uploadResearch(owner.token, workspace.id, file, contentType, "interview");
  expect(res.status, res.text).toBe(201);
  const id = res.body.id as string;
  const done = await waitFor(async () => {
    const r = await call("GET", `/api/research/sources/${id}`, { token: owner.token });
    return r.body.processing_status !== "pending" ? r.body : undefined;
  }, 90_000);
  expect(done.processing_status, done.processing_error).toBe("completed");
  await waitFor(async () => (await db().entities.researchSource.get({ workspace_id: workspace.id, id }).go({ consistent: true })).data?.indexed, 90_000);
  return { token: owner.token, workspaceId: workspace.id, sourceId: id, text: done.extracted_text as string };
}

type Insight = { title: string; description: string; source_ids: string[]; frequency: number; quotes: { text: string; source_id: string; speaker: string | null }[] };

let ctx: { token: string; workspaceId: string; sourceId: string; text: string };

beforeAll(async () => {
  ctx = await uploadIndexed(await realFile("va-mobile-app/P16-home-screen-evaluative-research-2024-04.transcript.vtt"), "text/vtt", "One interview");
}, 180_000);

describe("POST /api/research/synthesize on one interview", () => {
  it("yields at least 3 insights grounded in the participant's own words", async () => {
    const res = await call("POST", "/api/research/synthesize", { token: ctx.token, body: { workspace_id: ctx.workspaceId, source_ids: [ctx.sourceId] } });
    expect(res.status, res.text).toBe(200);
    const insights = res.body.insights as Insight[];
    expect(insights.length, res.body.summary).toBeGreaterThanOrEqual(3);
    for (const insight of insights) {
      expect(insight.source_ids).toEqual([ctx.sourceId]);
      expect(insight.frequency).toBe(1);
      expect(insight.description).toMatch(/^One participant \(P16\), in \d+ separate passages/);
      expect(insight.quotes.length).toBeGreaterThan(0);
      for (const q of insight.quotes) {
        expect(ctx.text).toContain(q.text);
        expect(q.speaker, q.text).toBe("P16");
        // A turn's words, never its "[00:01:02.000] Name:" label or a clock time.
        expect(q.text).not.toMatch(/\d{2}:\d{2}:\d{2}|Perigean:|P16:/);
      }
    }
  }, 120_000);
});

/** The retention-study notes: one participant each, answers written after the guide's questions. */
const NOTES = ["va-mobile-app/interview-notes/2023-07-retention-study-participant-10.md", "va-mobile-app/interview-notes/2023-07-retention-study-participant-11.md"];

/**
 * Lines of a note that are never the participant's words: the guide's questions (up to their "?"), its script and
 * metadata. A quote must not contain any of them.
 */
function guideText(raw: string): string[] {
  const out: string[] = [];
  for (const line of raw.split("\n")) {
    const l = line.replace(/^[\s*#_-]+/, "").trim();
    const q = l.lastIndexOf("?");
    if (q > 0) out.push(l.slice(0, q + 1));
    else if (/^(July 2023|Start recording|Now we’re going|The following questions|VA Health and Benefits Mobile App)/.test(l)) out.push(l);
  }
  return out.filter((l) => l.length > 8);
}

describe.each(NOTES)("POST /api/research/synthesize on one interview note (%s)", (path) => {
  let note: { token: string; workspaceId: string; sourceId: string; text: string; raw: string };
  beforeAll(async () => {
    const file = await realFile(path);
    note = { ...(await uploadIndexed(file, "text/markdown", "One note")), raw: Buffer.from(file.data).toString("utf8") };
  }, 180_000);

  it("yields at least 3 insights whose quotes are the participant's own answers, verbatim", async () => {
    const res = await call("POST", "/api/research/synthesize", { token: note.token, body: { workspace_id: note.workspaceId, source_ids: [note.sourceId] } });
    expect(res.status, res.text).toBe(200);
    const insights = res.body.insights as Insight[];
    expect(insights.length, res.body.summary).toBeGreaterThanOrEqual(3);
    const guide = guideText(note.raw);
    expect(guide.length).toBeGreaterThan(20);
    const quoted: string[] = [];
    for (const insight of insights) {
      expect(insight.source_ids).toEqual([note.sourceId]);
      expect(insight.description).toMatch(/^One participant \(.+\), in (one passage|\d+ separate passages)/);
      expect(insight.quotes.length).toBeGreaterThan(0);
      for (const q of insight.quotes) {
        expect(note.text).toContain(q.text);
        // The participant's words are in the note as written, not the guide's questions, script or metadata.
        expect(note.raw).toContain(q.text);
        for (const g of guide) expect(q.text.includes(g) || g.includes(q.text), `${q.text} / ${g}`).toBe(false);
        expect(q.text).not.toMatch(/\?|^(Yes|No)\.?$|Army Veteran|service connected|iPhone|Samsung|Since 20\d\d/);
        quoted.push(q.text);
      }
    }
    // Distinct points, not one answer quoted over and over.
    expect(new Set(quoted).size).toBeGreaterThanOrEqual(4);
  }, 120_000);
});
