import { beforeAll, describe, expect, it } from "vitest";
import { readdir } from "node:fs/promises";
import { extname, join, relative } from "node:path";
import { call, newWorkspace } from "../support/api";
import { multipart, realFile, waitFor } from "../support/multipart";

// The whole product on real research: both realdata workspaces are ingested through the API, synthesized, and the
// jupyter one is carried through recommendations to a published PRD. Mentions are embedded at ingestion (the Index
// step), as in production.
process.env.MENTION_INDEXING = "on";

const REALDATA = new URL("../../../shared/realdata/", import.meta.url).pathname;
const MIME: Record<string, string> = {
  ".pdf": "application/pdf", ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  ".csv": "text/csv", ".json": "application/json", ".md": "text/markdown", ".vtt": "text/vtt", ".png": "image/png",
};
const typeOf = (p: string) =>
  p.includes("survey") ? "survey" : p.includes("support") ? "support_ticket" : p.includes("review") ? "feedback" : p.includes("interview") || p.includes("transcript") || p.endsWith(".vtt") ? "interview" : "other";

interface Loaded { token: string; workspaceId: string; sources: { id: string; title: string; text: string }[] }

async function ingest(folder: string): Promise<Loaded> {
  const { owner, workspace } = await newWorkspace(folder);
  const files: string[] = [];
  const walk = async (dir: string) => {
    for (const e of await readdir(dir, { withFileTypes: true })) {
      const full = join(dir, e.name);
      if (e.isDirectory()) await walk(full);
      else if (MIME[extname(e.name)] && e.name !== "MANIFEST.md") files.push(relative(REALDATA, full));
    }
  };
  await walk(join(REALDATA, folder));
  const ids: string[] = [];
  for (const path of files) {
    const file = await realFile(path);
    const body = await multipart({ workspace_id: workspace.id, source_type: typeOf(path), title: file.name }, { ...file, type: MIME[extname(path)]! });
    const res = await call("POST", "/api/research/upload", { token: owner.token, raw: body });
    expect(res.status, `${path}: ${res.text}`).toBe(201);
    ids.push(res.body.id);
  }
  const sources = [];
  for (const id of ids) {
    const s = await waitFor(async () => {
      const r = await call("GET", `/api/research/sources/${id}`, { token: owner.token });
      return r.body.processing_status !== "pending" ? r.body : undefined;
    }, 240_000);
    if (s.processing_status === "completed") sources.push({ id, title: s.title, text: s.extracted_text as string });
  }
  // Mentions are embedded after a source completes, in the background; synthesis is fastest once that is done, so
  // the flow waits for it, as `npm run demo` does.
  for (const { id } of sources) {
    await waitFor(async () => (await call("GET", `/api/research/sources/${id}`, { token: owner.token })).body.indexed === true, 300_000, 250);
  }
  return { token: owner.token, workspaceId: workspace.id, sources };
}

async function synthesize(ws: Loaded) {
  const res = await call("POST", "/api/research/synthesize", { token: ws.token, body: { workspace_id: ws.workspaceId, source_ids: ws.sources.map((s) => s.id) } });
  expect(res.status, res.text).toBe(200);
  return res.body as { insights: { id: string; title: string; description: string; insight_type: string; frequency: number; source_ids: string[]; quotes: { text: string; source_id: string }[] }[]; insight_ids: string[]; summary: string };
}

function expectGroundedAndDistinct(ws: Loaded, insights: Awaited<ReturnType<typeof synthesize>>["insights"]) {
  const texts = new Map(ws.sources.map((s) => [s.id, s.text]));
  let quotes = 0;
  for (const insight of insights) {
    expect(insight.quotes.length, insight.title).toBeGreaterThan(0);
    expect(insight.frequency).toBe(new Set(insight.source_ids).size);
    for (const q of insight.quotes) {
      expect(texts.get(q.source_id), `quote of "${insight.title}" not verbatim in its source`).toContain(q.text);
      quotes++;
    }
  }
  expect(quotes).toBeGreaterThan(insights.length);
  // No two insights about the same thing: titles differ, and no two titles share most of their content words
  // (Jaccard over words of 4+ letters, the framing words "users", "struggle", "feedback"... left out).
  const FRAME = new Set(["users", "user", "struggle", "with", "feedback", "value", "work", "how", "ask", "for", "and"]);
  const words = (t: string) => new Set((t.toLowerCase().match(/[a-z]{4,}/g) ?? []).filter((w) => !FRAME.has(w)));
  expect(new Set(insights.map((i) => i.title.toLowerCase())).size).toBe(insights.length);
  for (let i = 0; i < insights.length; i++) {
    for (let j = i + 1; j < insights.length; j++) {
      const a = words(insights[i]!.title), b = words(insights[j]!.title);
      const shared = [...a].filter((w) => b.has(w)).length;
      const union = new Set([...a, ...b]).size;
      expect(shared / Math.max(1, union), `"${insights[i]!.title}" vs "${insights[j]!.title}"`).toBeLessThan(0.6);
    }
  }
}

const themeHit = (insights: { title: string; description: string }[], pattern: RegExp) =>
  insights.some((i) => pattern.test(`${i.title} ${i.description}`));

describe("research to delivery on the real data", () => {
  let jupyter: Loaded;
  let va: Loaded;
  beforeAll(async () => {
    jupyter = await ingest("jupyter");
    va = await ingest("va-mobile-app");
  }, 600_000);

  it("synthesizes the VA app research into grounded, distinct insights a PM would recognise", async () => {
    const { insights } = await synthesize(va);
    console.log(`VA insights:\n${insights.map((i) => `  - ${i.title} [${i.frequency} sources]`).join("\n")}`);
    expect(insights.length).toBeGreaterThanOrEqual(4);
    expectGroundedAndDistinct(va, insights);
    expect(themeHit(insights, /log ?in|sign ?in|password|face id|login/i), "sign-in theme").toBe(true);
    expect(themeHit(insights, /prescription|refill|pharmacy/i), "prescriptions theme").toBe(true);
    expect(themeHit(insights, /appointment|claim|appeal|benefit/i), "appointments or claims theme").toBe(true);
  }, 300_000);

  it("synthesizes the Jupyter research and carries it to a published PRD", async () => {
    const syn = await synthesize(jupyter);
    const { insights } = syn;
    console.log(`Jupyter insights:\n${insights.map((i) => `  - ${i.title} [${i.frequency} sources]`).join("\n")}`);
    expect(insights.length).toBeGreaterThanOrEqual(5);
    expectGroundedAndDistinct(jupyter, insights);
    // Themes the Jupyter surveys and issues are known for (see core/ai/synthesis/README.md for what the local engine finds).
    expect(themeHit(insights, /\bgit\b|version control/i), "version control theme").toBe(true);
    expect(themeHit(insights, /keyboard|shortcut|vim|emacs/i), "editing and shortcuts theme").toBe(true);
    expect(themeHit(insights, /kernel|server|extension|documentation/i), "kernels, server or docs theme").toBe(true);

    const token = jupyter.token;
    const gen = await call("POST", "/api/recommendations/generate", { token, body: { workspace_id: jupyter.workspaceId, insight_ids: syn.insight_ids.slice(0, 40) } });
    expect(gen.status, gen.text).toBe(200);
    expect(gen.body.count).toBeGreaterThanOrEqual(3);
    const top = gen.body.recommendations[0];
    for (const r of gen.body.recommendations) for (const id of r.addresses_insight_ids) expect(syn.insight_ids).toContain(id);
    expect((await call("PATCH", `/api/recommendations/${top.id}/status`, { token, body: { status: "accepted" } })).body.status).toBe("accepted");

    const prd = await call("POST", "/api/documents/draft", { token, body: { workspace_id: jupyter.workspaceId, document_type: "prd", recommendation_id: top.id } });
    expect(prd.status, prd.text).toBe(200);
    const addressed = syn.insights.filter((i) => top.addresses_insight_ids.includes(i.id));
    // Grounded: the PRD quotes the research it cites, verbatim.
    expect(addressed.some((i) => i.quotes.some((q) => prd.body.content.includes(q.text)))).toBe(true);
    const blocks = await call("POST", "/api/blocks/extract", { token, body: { workspace_id: jupyter.workspaceId, document_id: prd.body.id } });
    expect(blocks.body.count).toBeGreaterThan(3);
    const challenge = await call("POST", `/api/blocks/${blocks.body.blocks[0].id}/challenge`, { token });
    expect(challenge.status).toBe(200);
    const v1 = await call("POST", `/api/documents/${prd.body.id}/versions`, { token, body: { change_summary: "reviewed" } });
    await call("PATCH", `/api/documents/${prd.body.id}`, { token, body: { content: `${prd.body.content}\n\n## Decision log\n\n- Agreed.\n` } });
    const v2 = await call("POST", `/api/documents/${prd.body.id}/versions`, { token, body: {} });
    const diff = await call("GET", `/api/documents/${prd.body.id}/diff`, { token, query: { from_revision: v1.body.revision_number, to_revision: v2.body.revision_number } });
    expect(diff.body.diff_stats.additions + diff.body.diff_stats.changes).toBeGreaterThanOrEqual(3);
    const restored = await call("POST", `/api/documents/${prd.body.id}/versions/${v1.body.id}/restore`, { token, body: {} });
    expect(restored.body.document.content).toBe(prd.body.content);
    for (const s of ["review", "approved", "published"]) {
      expect((await call("POST", `/api/documents/${prd.body.id}/status`, { token, body: { target_status: s } })).status).toBe(200);
    }
    expect((await call("GET", `/api/documents/${prd.body.id}`, { token })).body.status).toBe("published");
  }, 300_000);
});
