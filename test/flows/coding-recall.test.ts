/**
 * Issue #11's baseline: the local synthesis engine against our own coding of held-out real research
 * (test/fixtures/coding: the VA interview notes and app-store reviews, the JupyterLab usability findings and the
 * Practical AI podcast transcript; the method is in that folder's README.md).
 *
 * Each realdata folder is one workspace (realdata/README.md): the coded sets of a folder are uploaded together
 * through `POST /api/research/upload` into a fresh workspace, extracted and indexed (MENTION_INDEXING on, as in
 * test/http/synthesis.test.ts), then `POST /api/research/synthesize` runs on them. The usability findings are one
 * unattributed document — one voice; since issue #11 an input of at most three people (here the findings and the
 * podcast) keeps one voice's themes when that voice comes back to them in separate passages (cluster.ts
 * `isSupported`); in the jupyter workspace they sit next to the podcast, as in real use.
 *
 * Insights are matched to coded themes by the rule in test/fixtures/coding/coding.ts: a quote supports a theme when
 * it overlaps one of the theme's evidence quotes or holds two of its keywords (only quotes from the set's own files
 * count); an insight matches a theme when two of its quotes support it, or one does and its title or description
 * names one of the theme's keywords.
 *
 * Asserted: the coding is well-formed and every coded quote is verbatim in its file (raw and extracted text); recall
 * and precision per set are at least the baseline recorded below (engine work must not regress them); the rule is
 * strict (themes coded for the other workspace match at most one insight). The figures are printed, with every
 * insight and the themes it matched. About 35 s on 2 cores (two workspaces, five files, ≈ 1,000 mentions embedded).
 * `CODING_DUMP=<dir>` also writes each workspace's insights as JSON. `npm run bench -- coding` measures the same
 * without the API, in seconds with a warm embedding cache: the quick loop for engine work.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { db } from "../../core/db/service";
import { call, newWorkspace } from "../support/api";
import { realFile, uploadResearch, waitFor } from "../support/multipart";
import {
  POLARITIES,
  describeMatches,
  insightsMatchingAny,
  loadCodingSets,
  matchTheme,
  normalise,
  pct,
  rawText,
  scoreSet,
  type CodingSet,
  type InsightLike,
  type SetScore,
} from "../fixtures/coding/coding";

// Mention vectors are computed at ingestion (the Index step), so synthesis reuses them.
process.env.MENTION_INDEXING = "on";

/**
 * Baseline measured on 2026-11-24, before any engine change for issue #11 (identical over three runs: the engine is
 * deterministic): themes of the set matched, and insights quoting the set's files that match one of its themes.
 *
 *   set                          recall          precision
 *   va-interview-notes           5/9  (56%)      6/9 (67%)
 *   va-app-store-reviews         6/12 (50%)      6/9 (67%)
 *   jupyter-usability-findings   1/12  (8%)      1/5 (20%)
 *   jupyter-podcast              1/12  (8%)      1/5 (20%)
 *
 * These are floors: raise them when the engine gets better; never lower them without saying why in the issue.
 *
 * Raised on 2026-11-24 after titles became sentences from the evidence (issue #11 item 3; a title that names the
 * theme's words lets one supporting quote match). Measured with the single-participant and survey work of the same
 * day in the tree: reviews 7/12 (precision 7/8), usability findings 3/12 (3/10), podcast 2/12 (2/6); with keyphrase
 * templates instead, on the same tree, 6/12, 2/12 and 1/12. Recall floors follow; precision floors stay, since the
 * number of insights per set is still moving with the single-participant work.
 *
 * Raised again the same day for issue #11 items 1 and 4 (one participant's themes in an input of at most three
 * people; interview-note structure; average linkage below 400 mentions, so these workspaces no longer depend on a
 * k-means seed). Measured through this test with everything in the tree: notes 4/9 (5/6), reviews 7/12 (6/7),
 * usability findings 8/12 (9/15), podcast 6/12 (6/10). The jupyter floors are raised with a margin (titles, which the
 * matching rule reads, are still changing). The notes floor of 5/9 is above what the change gives (4/9): it was a
 * lucky k-means draw — over seeds 1–10 and 42, HEAD's mean on that set was 3.0/9, precision 0.39.
 *
 * Notes floor set to 4/9 and its precision floor raised to 6/7 on 2026-11-24 (said in issue #11's note): the engine
 * gives a stable 4/9 (6/7) there with no seed, above the baseline engine's 3.0/9 mean, and no general change found
 * a fifth theme without tuning on the set. The precision floor rises so the set still guards against regressions.
 *
 * Usability findings precision floor raised to 3/5 on 2026-11-24: the report's method (its limitations, its
 * procedure) is no longer evidence (notes.ts `isStudyMethod`), which drops the insights made of it and leaves the
 * findings as they were: 8/12 (10/16) against 8/12 (9/18) before.
 */
const BASELINE: Record<string, { matched: number; precision: number }> = {
  "va-interview-notes": { matched: 4, precision: 6 / 7 },
  "va-app-store-reviews": { matched: 7, precision: 6 / 9 },
  "jupyter-usability-findings": { matched: 6, precision: 3 / 5 },
  "jupyter-podcast": { matched: 4, precision: 1 / 2 },
};
/** The other workspace's themes may match at most this many insights (strictness of the matching rule). */
const MAX_CROSS_MATCHES = 1;

type Insight = InsightLike & { id: string; insight_type: string };

interface WorkspaceRun {
  workspace: string;
  sets: CodingSet[];
  /** Source id per realdata path. */
  ids: Map<string, string>;
  /** extracted_text per realdata path. */
  texts: Map<string, string>;
  insights: Insight[];
  seconds: { ingest: number; synthesize: number };
}

const sets = loadCodingSets();
const workspaces = [...new Set(sets.map((s) => s.workspace))];
const runs = new Map<string, WorkspaceRun>();

async function runWorkspace(workspace: string): Promise<WorkspaceRun> {
  const own = sets.filter((s) => s.workspace === workspace);
  const { owner, workspace: ws } = await newWorkspace(`coding baseline: ${workspace}`);
  const token = owner.token;
  const t0 = performance.now();
  const ids = new Map<string, string>();
  for (const f of own.flatMap((s) => s.files)) {
    const res = await uploadResearch(token, ws.id, await realFile(f.path), f.content_type, f.source_type);
    expect(res.status, res.text).toBe(201);
    ids.set(f.path, res.body.id);
  }
  const texts = new Map<string, string>();
  for (const [path, id] of ids) {
    const done = await waitFor(async () => {
      const r = await call("GET", `/api/research/sources/${id}`, { token });
      return r.body.processing_status !== "pending" ? r.body : undefined;
    }, 90_000);
    expect(done.processing_status, `${path}: ${done.processing_error}`).toBe("completed");
    texts.set(path, done.extracted_text);
  }
  // The Index step runs after a source is marked completed.
  for (const id of ids.values()) {
    await waitFor(async () => (await db().entities.researchSource.get({ workspace_id: ws.id, id }).go({ consistent: true })).data?.indexed, 90_000);
  }
  const t1 = performance.now();
  const res = await call("POST", "/api/research/synthesize", { token, body: { workspace_id: ws.id, source_ids: [...ids.values()] } });
  expect(res.status, res.text).toBe(200);
  expect(res.body.engine).toBe("local");
  const t2 = performance.now();
  // CODING_DUMP=<dir>: keep the insights for reading (one JSON file per workspace).
  if (process.env.CODING_DUMP) {
    const { mkdirSync, writeFileSync } = await import("node:fs");
    mkdirSync(process.env.CODING_DUMP, { recursive: true });
    const sourceOf = Object.fromEntries([...ids].map(([path, id]) => [id, path]));
    writeFileSync(`${process.env.CODING_DUMP}/${workspace}.json`, JSON.stringify({ sources: sourceOf, insights: res.body.insights }, null, 2));
  }
  return { workspace, sets: own, ids, texts, insights: res.body.insights, seconds: { ingest: (t1 - t0) / 1000, synthesize: (t2 - t1) / 1000 } };
}

beforeAll(async () => {
  for (const w of workspaces) runs.set(w, await runWorkspace(w));
}, 240_000);

function scoresOf(run: WorkspaceRun): SetScore[] {
  return run.sets.map((s) => scoreSet(s, run.insights, new Set(s.files.map((f) => run.ids.get(f.path)!))));
}

describe("our coding of held-out real research (test/fixtures/coding)", () => {
  it("is well-formed: 5–12 findings per set, 2–6 keywords none inside another, 1–3 evidence quotes, a known polarity", () => {
    const ids = new Set<string>();
    for (const s of sets) {
      expect(s.themes.length, s.set).toBeGreaterThanOrEqual(5);
      expect(s.themes.length, s.set).toBeLessThanOrEqual(12);
      const files = new Set(s.files.map((f) => f.path));
      for (const t of s.themes) {
        expect(ids.has(t.id), `duplicate id ${t.id}`).toBe(false);
        ids.add(t.id);
        expect(t.finding.length, t.id).toBeGreaterThan(20);
        expect(POLARITIES, t.id).toContain(t.polarity);
        expect(t.keywords.length, t.id).toBeGreaterThanOrEqual(2);
        expect(t.keywords.length, t.id).toBeLessThanOrEqual(6);
        const kws = t.keywords.map(normalise);
        for (const a of kws) for (const b of kws) if (a !== b) expect(b.includes(a), `${t.id}: "${a}" is inside "${b}"`).toBe(false);
        expect(t.evidence.length, t.id).toBeGreaterThanOrEqual(1);
        expect(t.evidence.length, t.id).toBeLessThanOrEqual(3);
        for (const e of t.evidence) expect(files.has(e.file), `${t.id}: ${e.file} is not a file of ${s.set}`).toBe(true);
      }
    }
  });

  it("quotes every piece of evidence verbatim from its file", () => {
    for (const s of sets) {
      for (const t of s.themes) for (const e of t.evidence) expect(rawText(e.file), `${t.id}`).toContain(e.quote);
    }
  });
});

describe.each(workspaces)("local synthesis on the %s workspace against our coding", (workspace) => {
  it("finds every coded quote verbatim in the extracted text too", () => {
    const run = runs.get(workspace)!;
    for (const s of run.sets) for (const t of s.themes) for (const e of t.evidence) expect(run.texts.get(e.file), t.id).toContain(e.quote);
  });

  it("keeps recall and precision per set at or above the recorded baseline (and prints them)", () => {
    const run = runs.get(workspace)!;
    const scores = scoresOf(run);
    const idsOf = (s: CodingSet) => new Set(s.files.map((f) => run.ids.get(f.path)!));
    const anyTheme = run.insights.filter((i) => run.sets.some((s) => s.themes.some((t) => matchTheme(i, t, idsOf(s))))).length;
    const lines = [
      `\n[coding] ${workspace}: ${run.insights.length} insights (ingest ${run.seconds.ingest.toFixed(1)} s, synthesis ${run.seconds.synthesize.toFixed(1)} s); ` +
        `${anyTheme}/${run.insights.length} match a coded theme`,
      ...scores.flatMap((sc, k) => [
        `  ${sc.set}: recall ${sc.matchedThemes.length}/${sc.themes} (${pct(sc.recall)}), precision ${sc.matchingInsights}/${sc.insights} (${pct(sc.precision)}); ` +
          `missed: ${sc.missedThemes.join(", ") || "none"}`,
        ...describeMatches(run.sets[k]!, run.insights, idsOf(run.sets[k]!)),
      ]),
    ];
    console.log(lines.join("\n"));
    for (const sc of scores) {
      const floor = BASELINE[sc.set]!;
      expect(sc.matchedThemes.length, `${sc.set} recall`).toBeGreaterThanOrEqual(floor.matched);
      expect(sc.precision ?? 0, `${sc.set} precision`).toBeGreaterThanOrEqual(floor.precision - 1e-9);
    }
  });

  it("never takes the researchers' account of their method for evidence (a report's limitations, its procedure)", () => {
    const run = runs.get(workspace)!;
    // The Jupyter usability report's "Limitations" and its opening procedure (realdata/jupyter/usability-research).
    const method = /self-selected|not an attempt to determine|None of the participants used a screen reader|These results are from user interviews|Participants were first asked|script explicitly asked participants/i;
    for (const i of run.insights) {
      expect(i.title, i.title).not.toMatch(method);
      for (const q of i.quotes) expect(q.text, i.title).not.toMatch(method);
    }
  });

  it("matches strictly: the other workspace's coded themes match (almost) none of these insights", () => {
    const run = runs.get(workspace)!;
    const others = sets.filter((s) => s.workspace !== workspace);
    const cross = insightsMatchingAny(run.insights, others);
    console.log(`[coding] ${workspace}: ${cross}/${run.insights.length} insights match a theme coded for another workspace`);
    expect(cross).toBeLessThanOrEqual(MAX_CROSS_MATCHES);
  });
});
