/**
 * The skills endpoints (spec 01 "Skills"; spec 02 Limits: Plans, has_skills, has_custom_skills, max_custom_skills),
 * through the real handler against DynamoDB Local: the official library, installation, custom skills (unique slugs,
 * author-only edits and deletion, semantic version bumps, the plan's count held under concurrency), and feedback.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { call, newUser, newWorkspace } from "../support/api";
import { setAccount } from "../support/billing";
import { expectEnvelope, partitionItems } from "./_helpers";
import { PLANS } from "../../core/billing/plans";
import { officialSkills } from "../../core/skill/library";
import { deletedAfterWrite, deletedBeforeUpdate } from "../support/races";
import { dynamoClient } from "../../core/db/client";
import { LIST_RESPONSE_BYTES, wireBytes } from "../../core/response-size";
import { fitInstalled, type InstalledSkill } from "../../core/skill";

const OFFICIAL = officialSkills();

/** A workspace whose owner is on a paid plan (growth: custom skills, 5 of them). */
async function paidWorkspace(plan: "pro" | "growth" | "power" = "growth") {
  const w = await newWorkspace(`Skills on ${plan}`);
  await setAccount(w.owner.id, { plan, status: "active" });
  return { token: w.owner.token, ownerId: w.owner.id, ws: w.workspace.id, owner: w.owner };
}

let counter = 0;
const slug = (base = "custom") => `${base}-${Date.now().toString(36)}-${(counter++).toString(36)}`;

const customBody = (ws: string, s = slug(), extra: Record<string, unknown> = {}) => ({
  workspace_id: ws,
  slug: s,
  name: "Churn debrief",
  description: "Explain why customers cancelled, from exit surveys and cancellation calls, in their own words.",
  instructions_md: "# Churn debrief\n\nRead every cancellation note. Quote verbatim.",
  category: "research",
  icon: "🧯",
  trigger_keywords: ["churn debrief", "why customers left"],
  sample_output_md: "# Churn debrief: May\n\n## Reasons\n\n- Price",
  output_template_md: "# Churn debrief: {{period}}\n\n## Reasons",
  ...extra,
});


const restore: (() => void)[] = [];
afterEach(() => {
  while (restore.length) restore.pop()!();
});

describe("GET /api/skills/library", () => {
  it("lists every official skill without its bodies; is_installed is null without a workspace", async () => {
    const u = await newUser();
    const res = await call("GET", "/api/skills/library", { token: u.token });
    expect(res.status, res.text).toBe(200);
    expect(res.body.map((s: { slug: string }) => s.slug)).toEqual(OFFICIAL.map((s) => s.slug));
    expect(res.body.length).toBeGreaterThanOrEqual(10);
    for (const s of res.body) {
      expect(s).toMatchObject({ is_official: true, is_installed: null, version: expect.stringMatching(/^\d+\.\d+\.\d+$/) });
      expect(s.instructions_md).toBeUndefined();
    }
  });

  it("says which are installed in the named workspace, and counts installations across workspaces", async () => {
    const a = await newWorkspace("Library A");
    const b = await newWorkspace("Library B");
    const before = (await call("GET", "/api/skills/library", { token: a.owner.token })).body.find((s: { slug: string }) => s.slug === "kano-survey-analysis").usage_count;
    for (const w of [a, b]) {
      const res = await call("POST", "/api/skills/install/kano-survey-analysis", { token: w.owner.token, body: { workspace_id: w.workspace.id } });
      expect(res.status, res.text).toBe(200);
    }
    const res = await call("GET", "/api/skills/library", { token: a.owner.token, query: { workspace_id: a.workspace.id } });
    const kano = res.body.find((s: { slug: string }) => s.slug === "kano-survey-analysis");
    expect(kano).toMatchObject({ is_installed: true, usage_count: before + 2 });
    expect(res.body.find((s: { slug: string }) => s.slug === "release-notes").is_installed).toBe(false);
  });

  it("answers a non-member 403, and a malformed workspace id 422", async () => {
    const { workspace } = await newWorkspace("Private");
    const outsider = await newUser();
    expectEnvelope(await call("GET", "/api/skills/library", { token: outsider.token, query: { workspace_id: workspace.id } }), 403, "FORBIDDEN");
    expectEnvelope(await call("GET", "/api/skills/library", { token: outsider.token, query: { workspace_id: "nope" } }), 422, "VALIDATION_ERROR");
  });
});

describe("GET /api/skills/library/{slug}", () => {
  it("gives an official skill in full", async () => {
    const u = await newUser();
    const res = await call("GET", "/api/skills/library/rice-prioritization", { token: u.token });
    expect(res.status, res.text).toBe(200);
    const official = OFFICIAL.find((s) => s.slug === "rice-prioritization")!;
    expect(res.body).toMatchObject({ id: official.id, slug: official.slug, name: "RICE prioritization", is_official: true, workspace_id: null, instructions_md: official.instructions_md, sample_output_md: official.sample_output_md, output_template_md: official.output_template_md });
    expect(res.body.trigger_keywords).toContain("RICE");
  });

  it("404 for an unknown slug, 422 for one that cannot be a slug", async () => {
    const u = await newUser();
    expectEnvelope(await call("GET", "/api/skills/library/no-such-skill", { token: u.token }), 404, "NOT_FOUND");
    expectEnvelope(await call("GET", "/api/skills/library/Not_A_Slug", { token: u.token }), 422, "VALIDATION_ERROR");
  });

  it("gives the named workspace's custom skill, which nobody else sees", async () => {
    const p = await paidWorkspace();
    const s = slug();
    expect((await call("POST", "/api/skills/custom", { token: p.token, body: customBody(p.ws, s) })).status).toBe(200);
    const mine = await call("GET", `/api/skills/library/${s}`, { token: p.token, query: { workspace_id: p.ws } });
    expect(mine.body).toMatchObject({ slug: s, is_official: false, workspace_id: p.ws, is_installed: true, usage_count: 1 });
    expectEnvelope(await call("GET", `/api/skills/library/${s}`, { token: p.token }), 404, "NOT_FOUND");
    const other = await newWorkspace("Other");
    expectEnvelope(await call("GET", `/api/skills/library/${s}`, { token: other.owner.token, query: { workspace_id: other.workspace.id } }), 404, "NOT_FOUND");
  });
});

describe("installing (POST, PATCH, DELETE /api/skills/install/{slug}; GET /api/skills/workspace)", () => {
  it("installs, lists, disables and configures, and uninstalls an official skill", async () => {
    const { owner, workspace } = await newWorkspace("Install");
    const ws = workspace.id;
    const installed = await call("POST", "/api/skills/install/release-notes", { token: owner.token, body: { workspace_id: ws, config: { tone: "plain" } } });
    expect(installed.status, installed.text).toBe(200);
    expect(installed.body).toMatchObject({ is_enabled: true, config: { tone: "plain" }, last_used_at: null, activation_count: 0, skill: { slug: "release-notes", is_installed: true } });

    // Installing again changes nothing and answers the same installation.
    const again = await call("POST", "/api/skills/install/release-notes", { token: owner.token, body: { workspace_id: ws } });
    expect(again.body).toMatchObject({ id: installed.body.id, config: { tone: "plain" } });

    const list = await call("GET", "/api/skills/workspace", { token: owner.token, query: { workspace_id: ws } });
    expect(list.body.map((i: { skill: { slug: string } }) => i.skill.slug)).toEqual(["release-notes"]);
    expect(list.body[0].skill.instructions_md.length).toBeGreaterThan(100);

    const disabled = await call("PATCH", "/api/skills/install/release-notes", { token: owner.token, body: { workspace_id: ws, is_enabled: false } });
    expect(disabled.body).toMatchObject({ is_enabled: false, config: { tone: "plain" } });
    const configured = await call("PATCH", "/api/skills/install/release-notes", { token: owner.token, body: { workspace_id: ws, config: { tone: "formal" } } });
    expect(configured.body).toMatchObject({ is_enabled: false, config: { tone: "formal" } });

    const removed = await call("DELETE", "/api/skills/install/release-notes", { token: owner.token, query: { workspace_id: ws } });
    expect(removed.body).toEqual({ status: "uninstalled", slug: "release-notes" });
    expect((await call("GET", "/api/skills/workspace", { token: owner.token, query: { workspace_id: ws } })).body).toEqual([]);
    expectEnvelope(await call("DELETE", "/api/skills/install/release-notes", { token: owner.token, query: { workspace_id: ws } }), 404, "NOT_FOUND");
    expectEnvelope(await call("PATCH", "/api/skills/install/release-notes", { token: owner.token, body: { workspace_id: ws, is_enabled: true } }), 404, "NOT_FOUND");
  });

  it("refuses an unknown skill (404), a non-member (403), an empty PATCH and a bad config (422)", async () => {
    const { owner, workspace } = await newWorkspace("Install errors");
    const outsider = await newUser();
    expectEnvelope(await call("POST", "/api/skills/install/no-such-skill", { token: owner.token, body: { workspace_id: workspace.id } }), 404, "NOT_FOUND");
    expectEnvelope(await call("POST", "/api/skills/install/release-notes", { token: outsider.token, body: { workspace_id: workspace.id } }), 403, "FORBIDDEN");
    expectEnvelope(await call("GET", "/api/skills/workspace", { token: outsider.token, query: { workspace_id: workspace.id } }), 403, "FORBIDDEN");
    expectEnvelope(await call("PATCH", "/api/skills/install/release-notes", { token: owner.token, body: { workspace_id: workspace.id } }), 422, "VALIDATION_ERROR");
    expectEnvelope(await call("POST", "/api/skills/install/release-notes", { token: owner.token, body: { workspace_id: workspace.id, config: { constructor: 1 } } }), 422, "VALIDATION_ERROR");
    expectEnvelope(await call("POST", "/api/skills/install/release-notes", { token: owner.token, body: { workspace_id: workspace.id, extra: 1 } }), 422, "VALIDATION_ERROR");
  });

  it("needs has_skills: a plan without it gets 403 FORBIDDEN (a plan gate)", async () => {
    const before = PLANS.trial.has_skills;
    PLANS.trial.has_skills = false;
    restore.push(() => (PLANS.trial.has_skills = before));
    const { owner, workspace } = await newWorkspace("No skills");
    const res = await call("POST", "/api/skills/install/release-notes", { token: owner.token, body: { workspace_id: workspace.id } });
    expectEnvelope(res, 403, "FORBIDDEN");
    expect(res.body.feature).toBe("has_skills");
  });

  it("cannot install another workspace's custom skill", async () => {
    const p = await paidWorkspace();
    const s = slug();
    expect((await call("POST", "/api/skills/custom", { token: p.token, body: customBody(p.ws, s) })).status).toBe(200);
    const other = await newWorkspace("Other");
    expectEnvelope(await call("POST", `/api/skills/install/${s}`, { token: other.owner.token, body: { workspace_id: other.workspace.id } }), 404, "NOT_FOUND");
  });
});

describe("custom skills (POST /api/skills/custom; PUT, DELETE /api/skills/custom/{slug})", () => {
  it("authors a skill at 1.0.0, installed in its workspace", async () => {
    const p = await paidWorkspace();
    const s = slug();
    const res = await call("POST", "/api/skills/custom", { token: p.token, body: customBody(p.ws, s, { trigger_keywords: ["churn debrief", " Churn Debrief ", "exit survey"] }) });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ slug: s, version: "1.0.0", is_official: false, usage_count: 1, is_installed: true, workspace_id: p.ws, category: "research", icon: "🧯", trigger_keywords: ["churn debrief", "exit survey"] });
    const list = await call("GET", "/api/skills/workspace", { token: p.token, query: { workspace_id: p.ws } });
    expect(list.body.map((i: { skill: { slug: string } }) => i.skill.slug)).toContain(s);
  });

  it("keeps slugs unique: official ones are taken, another workspace's are taken", async () => {
    const a = await paidWorkspace();
    const b = await paidWorkspace();
    expectEnvelope(await call("POST", "/api/skills/custom", { token: a.token, body: customBody(a.ws, "release-notes") }), 409, "CONFLICT");
    const s = slug();
    expect((await call("POST", "/api/skills/custom", { token: a.token, body: customBody(a.ws, s) })).status).toBe(200);
    expectEnvelope(await call("POST", "/api/skills/custom", { token: b.token, body: customBody(b.ws, s) }), 409, "CONFLICT");
    expectEnvelope(await call("POST", "/api/skills/custom", { token: a.token, body: customBody(a.ws, s) }), 409, "CONFLICT");
  });

  it.each([
    ["an uppercase slug", { slug: "Churn" }],
    ["a slug with a double hyphen", { slug: "churn--debrief" }],
    ["a slug over 64 characters", { slug: "a".repeat(65) }],
    ["a slug that is a path word", { slug: "import" }],
    ["a description over 1,024 characters", { description: "d".repeat(1025) }],
    ["a keyword with a comma", { trigger_keywords: ["a, b"] }],
    ["an unknown field", { tags: ["x"] }],
    ["empty instructions", { instructions_md: "   " }],
  ])("refuses %s with 422", async (_what, extra) => {
    const p = await paidWorkspace();
    expectEnvelope(await call("POST", "/api/skills/custom", { token: p.token, body: customBody(p.ws, slug(), extra) }), 422, "VALIDATION_ERROR");
  });

  it("needs has_custom_skills: the trial and pro plans get 403 FORBIDDEN (a plan gate)", async () => {
    const { owner, workspace } = await newWorkspace("Trial");
    const trial = await call("POST", "/api/skills/custom", { token: owner.token, body: customBody(workspace.id) });
    expectEnvelope(trial, 403, "FORBIDDEN");
    expect(trial.body).toMatchObject({ feature: "has_custom_skills", plan: "trial", required_plan: "growth" });
    const pro = await paidWorkspace("pro");
    expectEnvelope(await call("POST", "/api/skills/custom", { token: pro.token, body: customBody(pro.ws) }), 403, "FORBIDDEN");
  });

  it("counts custom skills against max_custom_skills atomically: concurrent creates at the edge make exactly one", async () => {
    const p = await paidWorkspace("growth");
    const limit = PLANS.growth.max_custom_skills!;
    for (let i = 0; i < limit - 1; i++) expect((await call("POST", "/api/skills/custom", { token: p.token, body: customBody(p.ws) })).status).toBe(200);
    const racing = await Promise.all(Array.from({ length: 4 }, () => call("POST", "/api/skills/custom", { token: p.token, body: customBody(p.ws) })));
    expect(racing.map((r) => r.status).sort()).toEqual([200, 402, 402, 402]);
    const refused = racing.find((r) => r.status === 402)!;
    expectEnvelope(refused, 402, "USAGE_LIMIT_EXCEEDED");
    expect(refused.body).toMatchObject({ usage_type: "custom_skills", current: limit, limit, plan: "growth" });
    // Deleting one gives its place back.
    const mine = (await call("GET", "/api/skills/workspace", { token: p.token, query: { workspace_id: p.ws } })).body.filter((i: { skill: { is_official: boolean } }) => !i.skill.is_official);
    expect(mine).toHaveLength(limit);
    expect((await call("DELETE", `/api/skills/custom/${mine[0].skill.slug}`, { token: p.token, query: { workspace_id: p.ws } })).status).toBe(200);
    expect((await call("POST", "/api/skills/custom", { token: p.token, body: customBody(p.ws) })).status).toBe(200);
  });

  it("has no count limit on the power plan", async () => {
    const p = await paidWorkspace("power");
    for (let i = 0; i < PLANS.growth.max_custom_skills! + 1; i++) expect((await call("POST", "/api/skills/custom", { token: p.token, body: customBody(p.ws) })).status).toBe(200);
  });

  it("GET /api/skills/workspace fits one Lambda answer: every installation listed, skills past the budget without their texts", async () => {
    const p = await paidWorkspace("power");
    // Quote-heavy texts at a custom skill's limits: a `"` takes 4 bytes once the JSON is the proxy result's string body,
    // so 18 such skills (about 360 KB each) passed Lambda's 6 MB answer.
    const quotes = (n: number) => `Q${'"'.repeat(n - 1)}`;
    const heavy = { instructions_md: quotes(50_000), sample_output_md: quotes(20_000), output_template_md: quotes(20_000) };
    const slugs: string[] = [];
    for (let i = 0; i < 18; i++) {
      const res = await call("POST", "/api/skills/custom", { token: p.token, body: customBody(p.ws, slug("heavy"), heavy) });
      expect(res.status, res.text).toBe(200);
      slugs.push(res.body.slug);
    }
    const list = await call("GET", "/api/skills/workspace", { token: p.token, query: { workspace_id: p.ws } });
    expect(list.status).toBe(200);
    expect(wireBytes(list.body)).toBeLessThanOrEqual(LIST_RESPONSE_BYTES + 100);
    // Every installation is there, in order; the first skills whole, the rest without their Markdown texts (marked).
    expect(list.body.map((i: { skill: { slug: string } }) => i.skill.slug)).toEqual(slugs);
    const omitted = list.body.filter((i: { texts_omitted: boolean }) => i.texts_omitted);
    expect(omitted.length).toBeGreaterThan(0);
    expect(list.body[0]).toMatchObject({ texts_omitted: false, skill: heavy });
    for (const i of omitted) expect(i.skill).toMatchObject({ instructions_md: "", sample_output_md: "", output_template_md: "", name: "Churn debrief", trigger_keywords: ["churn debrief", "why customers left"] });
    // A skill's texts are one read away.
    const last = omitted.at(-1).skill.slug;
    expect((await call("GET", `/api/skills/library/${last}`, { token: p.token, query: { workspace_id: p.ws } })).body).toMatchObject(heavy);
  });

  it("fitInstalled cuts the list only when even skills without their texts pass the budget", () => {
    const view = (n: number) => ({
      id: `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`,
      skill: { slug: `s-${n}`, description: "d".repeat(1000), instructions_md: "i".repeat(5000), sample_output_md: "", output_template_md: "" },
      is_enabled: true, config: {}, installed_at: "2024-01-01T00:00:00.000Z", last_used_at: null, activation_count: 0, texts_omitted: false,
    }) as unknown as InstalledSkill;
    const views = Array.from({ length: 10 }, (_, i) => view(i));
    const roomy = fitInstalled(views, 10 * wireBytes(views[0]));
    expect(roomy.map((v) => v.texts_omitted)).toEqual(Array(10).fill(false));
    const tight = fitInstalled(views, 10 * 1500 + 2 * 5000);
    expect(tight).toHaveLength(10);
    expect(tight.filter((v) => !v.texts_omitted)).toHaveLength(2);
    expect(tight.slice(0, 2).every((v) => !v.texts_omitted)).toBe(true);
    const cut = fitInstalled(views, 3 * 1200);
    expect(cut.length).toBeLessThan(10);
    expect(cut.every((v) => v.texts_omitted && v.skill.instructions_md === "")).toBe(true);
  });

  it("bumps the semantic version by what an edit changes, and only on a change", async () => {
    const p = await paidWorkspace();
    const s = slug();
    await call("POST", "/api/skills/custom", { token: p.token, body: customBody(p.ws, s) });
    const put = (body: Record<string, unknown>) => call("PUT", `/api/skills/custom/${s}`, { token: p.token, body: { workspace_id: p.ws, ...body } });
    expect((await put({ name: "Churn debrief v2" })).body).toMatchObject({ version: "1.0.1", name: "Churn debrief v2" });
    expect((await put({ trigger_keywords: ["churn debrief"], icon: null })).body).toMatchObject({ version: "1.0.2", trigger_keywords: ["churn debrief"], icon: null });
    expect((await put({ instructions_md: "# Churn debrief\n\nNew steps." })).body).toMatchObject({ version: "1.1.0", instructions_md: "# Churn debrief\n\nNew steps." });
    expect((await put({ output_template_md: "# Churn: {{period}}\n\n## Reasons\n\n## Quotes" })).body).toMatchObject({ version: "2.0.0" });
    const same = await put({ name: "Churn debrief v2" });
    expect(same.status).toBe(200);
    expect(same.body.version).toBe("2.0.0");
    expectEnvelope(await put({}), 422, "VALIDATION_ERROR");
  });

  it("lets only the author workspace edit or delete", async () => {
    const a = await paidWorkspace();
    const b = await paidWorkspace();
    const s = slug();
    await call("POST", "/api/skills/custom", { token: a.token, body: customBody(a.ws, s) });
    const edit = await call("PUT", `/api/skills/custom/${s}`, { token: b.token, body: { workspace_id: b.ws, name: "Mine now" } });
    expectEnvelope(edit, 403, "FORBIDDEN");
    expect(edit.body.detail).toMatch(/authored/);
    expectEnvelope(await call("DELETE", `/api/skills/custom/${s}`, { token: b.token, query: { workspace_id: b.ws } }), 403, "FORBIDDEN");
    // A member of the author workspace who is not its owner may edit (skills are the workspace's).
    const member = await newUser();
    expect((await call("POST", `/api/workspaces/${a.ws}/members`, { token: a.token, body: { email: member.email, role: "member" } })).status).toBe(201);
    expect((await call("PUT", `/api/skills/custom/${s}`, { token: member.token, body: { workspace_id: a.ws, name: "Team edit" } })).body.name).toBe("Team edit");
    // Someone outside the author workspace naming it: 403 for the membership.
    expectEnvelope(await call("PUT", `/api/skills/custom/${s}`, { token: b.token, body: { workspace_id: a.ws, name: "x" } }), 403, "FORBIDDEN");
  });

  it("refuses edits of official skills (403) and of unknown ones (404)", async () => {
    const p = await paidWorkspace();
    expectEnvelope(await call("PUT", "/api/skills/custom/prd-review", { token: p.token, body: { workspace_id: p.ws, name: "x" } }), 403, "FORBIDDEN");
    expectEnvelope(await call("DELETE", "/api/skills/custom/prd-review", { token: p.token, query: { workspace_id: p.ws } }), 403, "FORBIDDEN");
    expectEnvelope(await call("PUT", "/api/skills/custom/never-made", { token: p.token, body: { workspace_id: p.ws, name: "x" } }), 404, "NOT_FOUND");
    expectEnvelope(await call("DELETE", "/api/skills/custom/never-made", { token: p.token, query: { workspace_id: p.ws } }), 404, "NOT_FOUND");
  });

  it("deletes a skill, its installation and feedback, and frees its slug", async () => {
    const a = await paidWorkspace();
    const s = slug();
    await call("POST", "/api/skills/custom", { token: a.token, body: customBody(a.ws, s) });
    expect((await call("POST", `/api/skills/${s}/feedback`, { token: a.token, body: { workspace_id: a.ws, rating: 4 } })).status).toBe(200);
    const res = await call("DELETE", `/api/skills/custom/${s}`, { token: a.token, query: { workspace_id: a.ws } });
    expect(res.body).toEqual({ status: "deleted", slug: s });
    expect((await call("GET", "/api/skills/workspace", { token: a.token, query: { workspace_id: a.ws } })).body).toEqual([]);
    expectEnvelope(await call("POST", `/api/skills/${s}/feedback`, { token: a.token, body: { workspace_id: a.ws, rating: 4 } }), 404, "NOT_FOUND");
    const b = await paidWorkspace();
    expect((await call("POST", "/api/skills/custom", { token: b.token, body: customBody(b.ws, s) })).status).toBe(200);
  });

  it("a delete interrupted right after its transaction leaves no feedback behind to attach to a later skill of the slug", async () => {
    const a = await paidWorkspace();
    const s = slug();
    await call("POST", "/api/skills/custom", { token: a.token, body: customBody(a.ws, s) });
    const rated = await call("POST", `/api/skills/${s}/feedback`, { token: a.token, body: { workspace_id: a.ws, rating: 1, feedback_text: "About the old skill" } });
    expect(rated.status).toBe(200);
    const name = "dieAfterSkillDelete";
    let dead = false;
    // The process dies once the delete's transaction has committed: every later call of it fails.
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        if (dead) throw new Error("the process died");
        const out = await next(args);
        if (/^TransactWrite/.test(context.commandName ?? "") && JSON.stringify(args.input).includes(`skill#custom#${s}`)) dead = true;
        return out;
      },
      { step: "initialize", name },
    );
    try {
      expect((await call("DELETE", `/api/skills/custom/${s}`, { token: a.token, query: { workspace_id: a.ws } })).status).toBe(500);
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
    expect(dead).toBe(true);
    // The client's retry finds the skill gone; nothing of its feedback is left.
    expectEnvelope(await call("DELETE", `/api/skills/custom/${s}`, { token: a.token, query: { workspace_id: a.ws } }), 404, "NOT_FOUND");
    expect((await partitionItems(`ws#${a.ws}`)).filter((i) => String(i.sk).startsWith(`skillfb#${s}#`))).toEqual([]);
    expect((await call("POST", "/api/skills/custom", { token: a.token, body: customBody(a.ws, s) })).status).toBe(200);
    const again = await call("POST", `/api/skills/${s}/feedback`, { token: a.token, body: { workspace_id: a.ws, rating: 5 } });
    expect(again.body.id).not.toBe(rated.body.id);
  });

  it("takes over the slug of a deleted workspace's skill", async () => {
    const a = await paidWorkspace();
    const s = slug();
    await call("POST", "/api/skills/custom", { token: a.token, body: customBody(a.ws, s) });
    expect((await call("DELETE", `/api/workspaces/${a.ws}`, { token: a.token })).status).toBe(204);
    const b = await paidWorkspace();
    const res = await call("POST", "/api/skills/custom", { token: b.token, body: customBody(b.ws, s) });
    expect(res.status, res.text).toBe(200);
    expect(res.body.workspace_id).toBe(b.ws);
  });

  it("can be uninstalled and installed again in its own workspace", async () => {
    const p = await paidWorkspace();
    const s = slug();
    await call("POST", "/api/skills/custom", { token: p.token, body: customBody(p.ws, s) });
    expect((await call("DELETE", `/api/skills/install/${s}`, { token: p.token, query: { workspace_id: p.ws } })).status).toBe(200);
    expect((await call("GET", `/api/skills/library/${s}`, { token: p.token, query: { workspace_id: p.ws } })).body).toMatchObject({ is_installed: false, usage_count: 0 });
    const again = await call("POST", `/api/skills/install/${s}`, { token: p.token, body: { workspace_id: p.ws } });
    expect(again.body).toMatchObject({ skill: { slug: s, is_official: false }, is_enabled: true });
  });
});

describe("writes racing a DELETE of the same skill (it was a 500)", () => {
  it("PUT /api/skills/custom/{slug} answers the edit it made when the skill is deleted right after it", async () => {
    const p = await paidWorkspace();
    const s = slug();
    expect((await call("POST", "/api/skills/custom", { token: p.token, body: customBody(p.ws, s) })).status).toBe(200);
    const res = await deletedAfterWrite(
      `skill#custom#${s}`,
      () => call("DELETE", `/api/skills/custom/${s}`, { token: p.token, query: { workspace_id: p.ws } }),
      () => call("PUT", `/api/skills/custom/${s}`, { token: p.token, body: { workspace_id: p.ws, name: "Renamed" } }),
      /^Update/,
    );
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ slug: s, name: "Renamed", version: "1.0.1" });
    expectEnvelope(await call("GET", `/api/skills/library/${s}`, { token: p.token, query: { workspace_id: p.ws } }), 404, "NOT_FOUND");
  });

  it("POST /api/skills/custom answers the skill it created when it is deleted right after the commit", async () => {
    const p = await paidWorkspace();
    const s = slug();
    const res = await deletedAfterWrite(
      `skill#custom#${s}`,
      () => call("DELETE", `/api/skills/custom/${s}`, { token: p.token, query: { workspace_id: p.ws } }),
      () => call("POST", "/api/skills/custom", { token: p.token, body: customBody(p.ws, s) }),
      /^TransactWrite/,
    );
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ slug: s, version: "1.0.0", usage_count: 1, is_installed: true, workspace_id: p.ws });
    expect((await call("GET", "/api/skills/workspace", { token: p.token, query: { workspace_id: p.ws } })).body).toEqual([]);
  });

  it("POST /api/skills/install/{slug}: the installation it wrote when it is removed right after; 404 when what it found installed is gone", async () => {
    const p = await paidWorkspace();
    const uninstall = () => call("DELETE", "/api/skills/install/prd-review", { token: p.token, query: { workspace_id: p.ws } });
    const install = () => call("POST", "/api/skills/install/prd-review", { token: p.token, body: { workspace_id: p.ws } });
    const first = await deletedAfterWrite("skill#install#prd-review", uninstall, install, /^Put/);
    expect(first.status, first.text).toBe(200);
    expect(first.body).toMatchObject({ skill: { slug: "prd-review" }, is_enabled: true });
    // Installed already (the create is refused), then uninstalled before the installation is read.
    expect((await install()).status).toBe(200);
    expectEnvelope(await deletedAfterWrite("skill#install#prd-review", uninstall, install, /^Put/), 404, "NOT_FOUND");
    // A custom skill installed again, and deleted right after.
    const s = slug();
    await call("POST", "/api/skills/custom", { token: p.token, body: customBody(p.ws, s) });
    expect((await call("DELETE", `/api/skills/install/${s}`, { token: p.token, query: { workspace_id: p.ws } })).status).toBe(200);
    const again = await deletedAfterWrite(
      `skill#install#${s}`,
      () => call("DELETE", `/api/skills/custom/${s}`, { token: p.token, query: { workspace_id: p.ws } }),
      () => call("POST", `/api/skills/install/${s}`, { token: p.token, body: { workspace_id: p.ws } }),
      /^TransactWrite/,
    );
    expect(again.status, again.text).toBe(200);
    expect(again.body).toMatchObject({ skill: { slug: s, is_official: false } });
  });

  it("POST /api/skills/install/{slug} of a custom skill deleted just before the write: 404, and no installation of nothing is left", async () => {
    const p = await paidWorkspace();
    const s = slug();
    await call("POST", "/api/skills/custom", { token: p.token, body: customBody(p.ws, s) });
    expect((await call("DELETE", `/api/skills/install/${s}`, { token: p.token, query: { workspace_id: p.ws } })).status).toBe(200);
    const res = await deletedBeforeUpdate(
      `skill#install#${s}`,
      () => call("DELETE", `/api/skills/custom/${s}`, { token: p.token, query: { workspace_id: p.ws } }),
      () => call("POST", `/api/skills/install/${s}`, { token: p.token, body: { workspace_id: p.ws } }),
      /^(Put|TransactWrite)/,
    );
    expectEnvelope(res, 404, "NOT_FOUND");
    expect((await partitionItems(`ws#${p.ws}`)).map((i) => String(i.sk)).filter((sk) => sk.includes(s))).toEqual([]);
  });
});

describe("POST /api/skills/{slug}/feedback", () => {
  let owner: { token: string; id: string; email: string };
  let ws: string;
  beforeAll(async () => {
    const w = await newWorkspace("Feedback");
    owner = w.owner;
    ws = w.workspace.id;
  });

  it("stores one rating per user and workspace; a second one replaces the first and keeps its id", async () => {
    const first = await call("POST", "/api/skills/research-plan/feedback", { token: owner.token, body: { workspace_id: ws, rating: 2, feedback_text: "Too long" } });
    expect(first.status, first.text).toBe(200);
    expect(first.body).toMatchObject({ skill_slug: "research-plan", rating: 2, feedback_text: "Too long" });
    const second = await call("POST", "/api/skills/research-plan/feedback", { token: owner.token, body: { workspace_id: ws, rating: 5 } });
    expect(second.body).toMatchObject({ id: first.body.id, rating: 5, feedback_text: null });
    expect(second.body.created_at >= first.body.created_at).toBe(true);
    // Another member rates separately.
    const member = await newUser();
    await call("POST", `/api/workspaces/${ws}/members`, { token: owner.token, body: { email: member.email, role: "member" } });
    const theirs = await call("POST", "/api/skills/research-plan/feedback", { token: member.token, body: { workspace_id: ws, rating: 3 } });
    expect(theirs.body.id).not.toBe(first.body.id);
  });

  it.each([0, 6, 2.5, "5"])("refuses rating %j with 422", async (rating) => {
    expectEnvelope(await call("POST", "/api/skills/research-plan/feedback", { token: owner.token, body: { workspace_id: ws, rating } }), 422, "VALIDATION_ERROR");
  });

  it("a rating landing after the custom skill's deletion answers 404 and leaves no feedback for a later skill of the slug", async () => {
    const p = await paidWorkspace();
    const s = slug();
    await call("POST", "/api/skills/custom", { token: p.token, body: customBody(p.ws, s) });
    // The skill is resolved, then deleted (with its feedback) before the rating is written.
    const res = await deletedBeforeUpdate(
      `skillfb#${s}#`,
      () => call("DELETE", `/api/skills/custom/${s}`, { token: p.token, query: { workspace_id: p.ws } }),
      () => call("POST", `/api/skills/${s}/feedback`, { token: p.token, body: { workspace_id: p.ws, rating: 1 } }),
      /^(TransactWrite|Put)/,
    );
    expectEnvelope(res, 404, "NOT_FOUND");
    expect((await call("POST", "/api/skills/custom", { token: p.token, body: customBody(p.ws, s) })).status).toBe(200);
    expect((await partitionItems(`ws#${p.ws}`)).filter((i) => String(i.sk).startsWith(`skillfb#${s}#`))).toEqual([]);
  });

  it("refuses an unknown skill (404) and a non-member (403)", async () => {
    expectEnvelope(await call("POST", "/api/skills/no-such-skill/feedback", { token: owner.token, body: { workspace_id: ws, rating: 3 } }), 404, "NOT_FOUND");
    const outsider = await newUser();
    expectEnvelope(await call("POST", "/api/skills/research-plan/feedback", { token: outsider.token, body: { workspace_id: ws, rating: 3 } }), 403, "FORBIDDEN");
  });
});
