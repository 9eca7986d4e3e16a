/**
 * Portable skills (issue #22 point 3): any skill exports as an Agent Skills folder (a zip of SKILL.md and assets/),
 * and a folder imports as a custom skill, validated by the format's rules. Through the real handler: an export read
 * back by a zip reader, an export -> import round trip that yields the same skill, a SKILL.md written by hand as the
 * format's own examples are, and the refusals (unknown front-matter fields named, limits, plan gates).
 */
import { describe, expect, it } from "vitest";
import JSZip from "jszip";
import { call, newUser, newWorkspace, type ApiResponse } from "../support/api";
import { multipart } from "../support/multipart";
import { setAccount } from "../support/billing";
import { expectEnvelope, headersOf } from "./_helpers";
import { dispatch } from "../../local/apigw";
import { parseSkillMd, FRONT_MATTER_FIELDS } from "../../core/skill/format";
import { officialSkill } from "../../core/skill/library";
import { dynamoClient } from "../../core/db/client";
import { TransactionCanceledException } from "@aws-sdk/client-dynamodb";

async function paidWorkspace() {
  const w = await newWorkspace("Portable skills");
  await setAccount(w.owner.id, { plan: "growth", status: "active" });
  return { token: w.owner.token, ws: w.workspace.id };
}

/** GET an export and keep its bytes (the API test client decodes bodies as text). */
async function exportZip(token: string, slug: string, workspaceId?: string) {
  const res = await dispatch({ method: "GET", path: `/api/skills/${slug}/export`, rawQuery: workspaceId ? `workspace_id=${workspaceId}` : "", headers: { authorization: `Bearer ${token}` } });
  const bytes = Buffer.from(res.body ?? "", res.isBase64Encoded ? "base64" : "utf8");
  return { status: res.statusCode, headers: res.headers as Record<string, string>, bytes, text: bytes.toString("utf8") };
}

async function importFile(token: string, workspaceId: string, file: { name: string; type: string; data: Buffer }, fields: Record<string, string> = {}): Promise<ApiResponse> {
  return call("POST", "/api/skills/import", { token, raw: await multipart({ workspace_id: workspaceId, ...fields }, file) });
}

const asZip = (data: Buffer, name = "skill.zip") => ({ name, type: "application/zip", data });
const asMd = (text: string) => ({ name: "SKILL.md", type: "text/markdown", data: Buffer.from(text) });

/** The fields that make a skill the same skill (ids, workspace and times are the new copy's own). */
const sameSkill = (s: Record<string, unknown>) => {
  const { id: _id, workspace_id: _ws, created_at: _c, updated_at: _u, usage_count: _n, is_installed: _i, is_official: _o, ...rest } = s;
  return rest;
};

describe("GET /api/skills/{slug}/export", () => {
  it("exports an official skill as its Agent Skills folder, with only the format's front-matter fields", async () => {
    const u = await newUser();
    const res = await exportZip(u.token, "opportunity-solution-tree");
    expect(res.status, res.text).toBe(200);
    expect(res.headers["content-type"]).toBe("application/zip");
    expect(res.headers["content-disposition"]).toBe('attachment; filename="opportunity-solution-tree-1.0.0.zip"');
    const zip = await JSZip.loadAsync(res.bytes);
    const names = Object.keys(zip.files).filter((n) => !n.endsWith("/")).sort();
    expect(names).toEqual(["opportunity-solution-tree/SKILL.md", "opportunity-solution-tree/assets/sample-output.md", "opportunity-solution-tree/assets/template.md"]);
    const md = await zip.file("opportunity-solution-tree/SKILL.md")!.async("string");
    const doc = parseSkillMd(md, ["SKILL.md"], "opportunity-solution-tree");
    const official = officialSkill("opportunity-solution-tree")!;
    expect(doc.body).toBe(official.instructions_md);
    expect(doc.metadata).toMatchObject({ "display-name": "Opportunity solution tree", version: "1.0.0", "trigger-keywords": official.trigger_keywords.join(", ") });
    const keys = md.split("\n---\n")[0]!.split("\n").filter((l) => /^[a-z-]+:/.test(l)).map((l) => l.split(":")[0]);
    for (const k of keys) expect(FRONT_MATTER_FIELDS).toContain(k);
    expect((await zip.file("opportunity-solution-tree/assets/template.md")!.async("string")).trim()).toBe(official.output_template_md);
    // The same skill exports to the same bytes.
    expect((await exportZip(u.token, "opportunity-solution-tree")).bytes.equals(res.bytes)).toBe(true);
  });

  it("exports a custom skill only to its workspace's members; 404 for an unknown skill", async () => {
    const p = await paidWorkspace();
    await call("POST", "/api/skills/custom", { token: p.token, body: { workspace_id: p.ws, slug: "exit-survey-digest", name: "Exit survey digest", description: "Digest exit surveys.", instructions_md: "Read them all." } });
    expect((await exportZip(p.token, "exit-survey-digest", p.ws)).status).toBe(200);
    const other = await newWorkspace("Other");
    expect((await exportZip(other.owner.token, "exit-survey-digest", other.workspace.id)).status).toBe(404);
    expect((await exportZip(other.owner.token, "exit-survey-digest", p.ws)).status).toBe(403);
    expect((await exportZip(p.token, "exit-survey-digest")).status).toBe(404);
    expect((await exportZip(p.token, "no-such-skill")).status).toBe(404);
  });
});

describe("POST /api/skills/import", () => {
  it("export -> import yields the same skill (a custom one, deleted between)", async () => {
    const p = await paidWorkspace();
    const created = await call("POST", "/api/skills/custom", {
      token: p.token,
      body: {
        workspace_id: p.ws, slug: "win-loss-review", name: "Win/loss review", icon: "🏁", category: "discovery",
        description: "Review won and lost deals: why buyers chose us or someone else. Use when the user asks for win/loss analysis.",
        instructions_md: "# Win/loss review\n\n1. Read each deal note.\n2. Quote the buyer verbatim.\n\n---\n\nNever guess a reason.",
        trigger_keywords: ["win/loss", "lost deals", "why we won"],
        sample_output_md: "# Win/loss: Q2\n\n## Why we won\n\n- Speed",
        output_template_md: "# Win/loss: {{quarter}}\n\n## Why we won\n\n## Why we lost",
      },
    });
    expect(created.status, created.text).toBe(200);
    // Edits move the version; the export carries it.
    const edited = await call("PUT", "/api/skills/custom/win-loss-review", { token: p.token, body: { workspace_id: p.ws, instructions_md: `${created.body.instructions_md}\n\nGroup by segment.` } });
    expect(edited.body.version).toBe("1.1.0");
    const zip = await exportZip(p.token, "win-loss-review", p.ws);
    expect((await call("DELETE", "/api/skills/custom/win-loss-review", { token: p.token, query: { workspace_id: p.ws } })).status).toBe(200);

    const imported = await importFile(p.token, p.ws, asZip(zip.bytes, "win-loss-review-1.1.0.zip"));
    expect(imported.status, imported.text).toBe(200);
    expect(imported.body.ignored_files).toEqual([]);
    expect(sameSkill(imported.body.skill)).toEqual(sameSkill(edited.body));
    expect(imported.body.skill).toMatchObject({ is_official: false, workspace_id: p.ws, is_installed: true, usage_count: 1 });
    // And it exports again to the same folder.
    const again = await JSZip.loadAsync((await exportZip(p.token, "win-loss-review", p.ws)).bytes);
    const first = await JSZip.loadAsync(zip.bytes);
    for (const name of Object.keys(first.files)) expect(await again.file(name)?.async("string"), name).toBe(await first.file(name)?.async("string"));
  });

  it("imports an official skill's export under another slug as the workspace's own copy", async () => {
    const p = await paidWorkspace();
    const zip = await exportZip(p.token, "release-notes");
    const res = await importFile(p.token, p.ws, asZip(zip.bytes), { slug: "our-release-notes" });
    expect(res.status, res.text).toBe(200);
    const official = (await call("GET", "/api/skills/library/release-notes", { token: p.token })).body;
    expect(sameSkill({ ...res.body.skill, slug: "release-notes" })).toEqual(sameSkill(official));
  });

  it("imports a SKILL.md written by hand as the format's own examples are (license, metadata, allowed-tools)", async () => {
    const p = await paidWorkspace();
    const handWritten = [
      "---",
      "name: pdf-processing",
      "description: Extract PDF text, fill forms, merge files. Use when handling PDFs.",
      "license: Apache-2.0",
      "metadata:",
      "  author: example-org",
      '  version: "1.0"',
      "allowed-tools: Bash(git:*) Bash(jq:*) Read",
      "---",
      "",
      "# PDF processing",
      "",
      "## When to use this skill",
      "Use this skill when the user needs to work with PDF files...",
      "",
      "## How to extract text",
      "1. Use pdfplumber for text extraction...",
      "",
    ].join("\n");
    const res = await importFile(p.token, p.ws, asMd(handWritten));
    expect(res.status, res.text).toBe(200);
    expect(res.body.skill).toMatchObject({
      slug: "pdf-processing", name: "Pdf processing", version: "1.0.0", license: "Apache-2.0", category: null, trigger_keywords: [],
      description: "Extract PDF text, fill forms, merge files. Use when handling PDFs.",
      instructions_md: "# PDF processing\n\n## When to use this skill\nUse this skill when the user needs to work with PDF files...\n\n## How to extract text\n1. Use pdfplumber for text extraction...",
      sample_output_md: "", output_template_md: "",
    });
    // What it came with travels on: the author and the allowed tools are in its export.
    const md = await (await JSZip.loadAsync((await exportZip(p.token, "pdf-processing", p.ws)).bytes)).file("pdf-processing/SKILL.md")!.async("string");
    expect(parseSkillMd(md)).toMatchObject({ license: "Apache-2.0", allowedTools: "Bash(git:*) Bash(jq:*) Read", metadata: { author: "example-org", version: "1.0.0" } });
  });

  it("lists the folder's files it does not use", async () => {
    const p = await paidWorkspace();
    const z = new JSZip();
    z.file("meeting-notes/SKILL.md", "---\nname: meeting-notes\ndescription: Turn meeting notes into decisions and owners.\n---\n\nList decisions first.\n");
    z.file("meeting-notes/scripts/clean.py", "print('x')");
    z.file("meeting-notes/references/REFERENCE.md", "More.");
    const res = await importFile(p.token, p.ws, asZip(await z.generateAsync({ type: "nodebuffer" })));
    expect(res.status, res.text).toBe(200);
    expect(res.body.ignored_files).toEqual(["references/REFERENCE.md", "scripts/clean.py"]);
  });

  it("refuses unknown top-level fields with a 422 naming them", async () => {
    const p = await paidWorkspace();
    const res = await importFile(p.token, p.ws, asMd("---\nname: with-extras\ndescription: Has fields the format does not define.\nversion: 2.0.0\nauthor: me\n---\n\nBody.\n"));
    expectEnvelope(res, 422, "VALIDATION_ERROR");
    expect(res.body.detail).toContain('"version"');
    expect(res.body.detail).toContain('"author"');
    expect(res.body.errors.filter((e: { type: string }) => e.type === "unknown_field").map((e: { loc: string[] }) => e.loc)).toEqual([
      ["body", "file", "SKILL.md", "frontmatter", "version"],
      ["body", "file", "SKILL.md", "frontmatter", "author"],
    ]);
  });

  it.each([
    ["an invalid name", "---\nname: Bad_Name\ndescription: x\n---\n\nBody.\n", /name/],
    ["a description over 1,024 characters", `---\nname: long-one\ndescription: ${"d".repeat(1025)}\n---\n\nBody.\n`, /1024/],
    ["no front matter", "# Just a README\n", /front matter/],
    ["no instructions", "---\nname: empty-body\ndescription: Nothing to follow.\n---\n", /instructions_md/],
    ["a reserved slug", "---\nname: import\ndescription: x\n---\n\nBody.\n", /slug/],
  ])("refuses %s with 422", async (_what, text, says) => {
    const p = await paidWorkspace();
    const res = await importFile(p.token, p.ws, asMd(text));
    expectEnvelope(res, 422, "VALIDATION_ERROR");
    expect(res.body.detail).toMatch(says);
  });

  it("refuses a folder whose name is not the skill's, a zip without SKILL.md, and a broken zip", async () => {
    const p = await paidWorkspace();
    const z = new JSZip();
    z.file("folder-name/SKILL.md", "---\nname: other-name\ndescription: x\n---\n\nBody.\n");
    expect((await importFile(p.token, p.ws, asZip(await z.generateAsync({ type: "nodebuffer" })))).body.detail).toMatch(/folder's name "folder-name"/);
    const none = new JSZip();
    none.file("README.md", "x");
    expectEnvelope(await importFile(p.token, p.ws, asZip(await none.generateAsync({ type: "nodebuffer" }))), 422, "VALIDATION_ERROR");
    expectEnvelope(await importFile(p.token, p.ws, asZip(Buffer.from("PK\u0003\u0004broken"))), 422, "VALIDATION_ERROR");
  });

  it("holds an import to a create's rules: plan gate, slug taken, non-member, body limit", async () => {
    const md = asMd("---\nname: gated-skill\ndescription: x\n---\n\nBody.\n");
    const trial = await newWorkspace("Trial import");
    expectEnvelope(await importFile(trial.owner.token, trial.workspace.id, md), 403, "FORBIDDEN");
    const p = await paidWorkspace();
    expectEnvelope(await importFile(p.token, p.ws, asMd("---\nname: kano-survey-analysis\ndescription: x\n---\n\nBody.\n")), 409, "CONFLICT");
    const outsider = await newUser();
    expectEnvelope(await importFile(outsider.token, p.ws, md), 403, "FORBIDDEN");
    const big = await importFile(p.token, p.ws, { name: "big.zip", type: "application/zip", data: Buffer.alloc(1024 * 1024 + 70 * 1024) });
    expectEnvelope(big, 413, "PAYLOAD_TOO_LARGE");
    expect(headersOf(big)["content-type"]).toContain("application/json");
  });
});

describe("POST /api/skills/import: bounds of a lone SKILL.md and of its front matter (it was a 500 or a 409)", () => {
  const md = (front: string[], name = "bounded-skill") => asMd(["---", `name: ${name}`, "description: Bounded.", ...front, "---", "", "Body.", ""].join("\n"));

  it("holds a lone SKILL.md to the per-file limit of a zip entry: 422, not stored", async () => {
    const p = await paidWorkspace();
    // A huge license, as a request may carry 1 MB: it used to pass parsing and the create schema and reach DynamoDB.
    const res = await importFile(p.token, p.ws, md([`license: ${"l".repeat(900 * 1024)}`]));
    expectEnvelope(res, 422, "VALIDATION_ERROR");
    expect(res.body.errors[0]).toMatchObject({ loc: ["body", "file"], type: "archive_too_large" });
    expect(res.body.detail).toMatch(/262144/);
    expectEnvelope(await call("GET", "/api/skills/library/bounded-skill", { token: p.token, query: { workspace_id: p.ws } }), 404, "NOT_FOUND");
  });

  it.each([
    ["a license over 500 characters", [`license: ${"l".repeat(501)}`], ["license"], "too_long"],
    ["more than 32 metadata keys", ["metadata:", ...Array.from({ length: 33 }, (_, i) => `  k${i}: v`)], ["metadata"], "too_many"],
    ["a metadata key over 64 characters", ["metadata:", `  ${"k".repeat(65)}: v`], ["metadata", `${"k".repeat(64)}…`], "too_long"],
    ["a metadata value over 2,048 characters", ["metadata:", `  author: ${"v".repeat(2049)}`], ["metadata", "author"], "too_long"],
    ["metadata over 8,192 characters together", ["metadata:", ...Array.from({ length: 5 }, (_, i) => `  k${i}: ${"v".repeat(2000)}`)], ["metadata"], "too_long"],
    ["more than 32 allowed tools", [`allowed-tools: ${Array.from({ length: 33 }, (_, i) => `Tool${i}`).join(" ")}`], ["allowed-tools"], "too_many"],
    ["an allowed tool over 128 characters", ["allowed-tools:", `  - ${"t".repeat(129)}`], ["allowed-tools"], "too_long"],
  ])("refuses %s with a 422 naming the field", async (what, front, field, type) => {
    const p = await paidWorkspace();
    // A slug per case: were one stored, the next case would meet a taken slug, not its own problem.
    const res = await importFile(p.token, p.ws, md(front, `bounded-${what.replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "")}`));
    expectEnvelope(res, 422, "VALIDATION_ERROR");
    expect(res.body.errors).toContainEqual(expect.objectContaining({ loc: ["body", "file", "SKILL.md", "frontmatter", ...field], type }));
  });

  it("takes a front matter at every bound, and exports it as it came", async () => {
    const p = await paidWorkspace();
    const metadata = Object.fromEntries(Array.from({ length: 32 }, (_, i) => [`key-${String(i).padStart(2, "0")}`, "v".repeat(240)]));
    const tools = Array.from({ length: 32 }, (_, i) => `T${i}`.padEnd(128, "x"));
    const res = await importFile(p.token, p.ws, md([`license: ${"l".repeat(500)}`, "metadata:", ...Object.entries(metadata).map(([k, v]) => `  ${k}: ${v}`), `allowed-tools: ${tools.join(" ")}`]));
    expect(res.status, res.text).toBe(200);
    expect(res.body.skill.license).toHaveLength(500);
    const exported = await JSZip.loadAsync((await exportZip(p.token, "bounded-skill", p.ws)).bytes);
    expect(parseSkillMd(await exported.file("bounded-skill/SKILL.md")!.async("string"))).toMatchObject({ metadata, allowedTools: tools.join(" ") });
    // The export adds this service's metadata keys (display-name, version): it still imports.
    const again = await importFile(p.token, p.ws, asZip(await exported.generateAsync({ type: "nodebuffer" })), { slug: "bounded-skill-copy" });
    expect(again.status, again.text).toBe(200);
  });

  it("answers 422, not a 409 'try again', when DynamoDB refuses the item's size in the create transaction", async () => {
    const p = await paidWorkspace();
    const name = "refuse-item-size";
    // DynamoDB's answer to an item over 400 KB inside a transaction (the bounds above keep a real one from getting there).
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        if (/^TransactWrite/.test(context.commandName ?? "") && JSON.stringify(args.input).includes("refuse-item-size")) {
          throw new TransactionCanceledException({
            message: "Transaction cancelled, please refer cancellation reasons for specific reasons [ValidationError, None, None, None]",
            $metadata: {},
            CancellationReasons: [{ Code: "ValidationError", Message: "Item size has exceeded the maximum allowed size" }, { Code: "None" }, { Code: "None" }, { Code: "None" }],
          });
        }
        return next(args);
      },
      { step: "initialize", name },
    );
    try {
      const res = await importFile(p.token, p.ws, md([], name));
      expectEnvelope(res, 422, "VALIDATION_ERROR");
      expect(res.body.errors[0]).toMatchObject({ type: "too_large" });
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
  });
});
