/**
 * The Agent Skills format (core/skill/format.ts): SKILL.md front matter validated by the format's rules
 * (agentskills.io/specification and its reference validator, skills-ref), this service's metadata keys, and a written
 * SKILL.md that parses back to the same skill.
 */
import { describe, expect, it } from "vitest";
import { AppError } from "../../../core/error";
import { contentOf, keywordsOf, parseSkillMd, readSkillFolder, renderSkillFolder, renderSkillMd, semverOf, templateSections, type SkillContent } from "../../../core/skill/format";

/** The 422 a parse throws, with its errors. */
function refusal(fn: () => unknown): AppError & { extra: { errors: { loc: (string | number)[]; msg: string; type: string }[] } } {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe("VALIDATION_ERROR");
    return err as never;
  }
  throw new Error("expected a 422");
}

const md = (front: string, body = "Do the thing.") => `---\n${front}\n---\n\n${body}\n`;

describe("parseSkillMd", () => {
  it("reads the specification's minimal example", () => {
    const doc = parseSkillMd(md("name: skill-name\ndescription: A description of what this skill does and when to use it."), ["SKILL.md"], "skill-name");
    expect(doc).toMatchObject({ name: "skill-name", description: "A description of what this skill does and when to use it.", license: null, compatibility: null, metadata: {}, allowedTools: null, body: "Do the thing." });
  });

  it("reads the specification's example with optional fields, allowed-tools as a string or a list", () => {
    const front = 'name: pdf-processing\ndescription: Extract PDF text, fill forms, merge files. Use when handling PDFs.\nlicense: Apache-2.0\nmetadata:\n  author: example-org\n  version: "1.0"';
    expect(parseSkillMd(md(`${front}\nallowed-tools: Bash(git:*) Bash(jq:*) Read`)).allowedTools).toBe("Bash(git:*) Bash(jq:*) Read");
    const doc = parseSkillMd(md(`${front}\nallowed-tools:\n  - Bash(git:*)\n  - Read`));
    expect(doc).toMatchObject({ license: "Apache-2.0", metadata: { author: "example-org", version: "1.0" }, allowedTools: ["Bash(git:*)", "Read"] });
  });

  it("refuses unknown top-level fields with a 422 naming each", () => {
    const err = refusal(() => parseSkillMd(md("name: a-skill\ndescription: Does a thing.\nversion: 2.0.0\ntags: [x]")));
    expect(err.message).toContain('"version"');
    expect(err.message).toContain('"tags"');
    const unknown = err.extra.errors.filter((e) => e.type === "unknown_field");
    expect(unknown.map((e) => e.loc.at(-1))).toEqual(["version", "tags"]);
  });

  it.each([
    ["PDF-Processing", "lowercase"],
    ["-pdf", "hyphen"],
    ["pdf-", "hyphen"],
    ["pdf--processing", "hyphen"],
    ["pdf_processing", "hyphen"],
    ["café", "a-z"],
    ["a".repeat(65), "64"],
  ])("refuses the name %j", (name, says) => {
    const err = refusal(() => parseSkillMd(md(`name: "${name}"\ndescription: Does a thing.`)));
    expect(err.extra.errors[0]!.loc).toEqual(["SKILL.md", "frontmatter", "name"]);
    expect(err.message).toContain(says);
  });

  it("takes a 64-character name and a 1,024-character description, and refuses one more", () => {
    const name = `a${"-b".repeat(31)}a`;
    expect(name).toHaveLength(64);
    expect(parseSkillMd(md(`name: ${name}\ndescription: ${"d".repeat(1024)}`)).name).toBe(name);
    expect(refusal(() => parseSkillMd(md(`name: ok\ndescription: ${"d".repeat(1025)}`))).message).toContain("1024");
  });

  it("requires name and description, and the name to equal the folder's", () => {
    const err = refusal(() => parseSkillMd(md("license: MIT")));
    expect(err.extra.errors.map((e) => e.loc.at(-1)).sort()).toEqual(["description", "name"]);
    expect(refusal(() => parseSkillMd(md("name: one\ndescription: x"), ["SKILL.md"], "two")).message).toContain('folder\'s name "two"');
  });

  it("limits compatibility to 500 characters and metadata to string values", () => {
    expect(refusal(() => parseSkillMd(md(`name: a\ndescription: x\ncompatibility: ${"c".repeat(501)}`))).message).toContain("500");
    const err = refusal(() => parseSkillMd(md("name: a\ndescription: x\nmetadata:\n  nested:\n    deep: 1")));
    expect(err.extra.errors[0]!.loc).toEqual(["SKILL.md", "frontmatter", "metadata", "nested"]);
    // Scalars are their text: YAML reads an unquoted 1.0 as a number.
    expect(parseSkillMd(md("name: a\ndescription: x\nmetadata:\n  version: 1.0\n  beta: true")).metadata).toEqual({ version: "1", beta: "true" });
  });

  it("refuses a file without front matter, invalid YAML, a list for front matter, and repeated keys", () => {
    expect(refusal(() => parseSkillMd("# Just Markdown\n")).extra.errors[0]!.type).toBe("front_matter_missing");
    expect(refusal(() => parseSkillMd(md("name: [unclosed\ndescription: x"))).extra.errors[0]!.type).toBe("yaml_invalid");
    expect(refusal(() => parseSkillMd(md("- a\n- b"))).extra.errors[0]!.type).toBe("front_matter_invalid");
    expect(refusal(() => parseSkillMd(md("name: a\nname: b\ndescription: x"))).extra.errors[0]!.type).toBe("yaml_invalid");
  });

  it("stops a YAML alias bomb instead of expanding it", () => {
    const bomb = ["a: &a [x, x, x, x, x, x, x, x, x]", ...Array.from({ length: 8 }, (_, i) => `${"bcdefghi"[i]}: &${"bcdefghi"[i]} [*${"abcdefgh"[i]}, *${"abcdefgh"[i]}, *${"abcdefgh"[i]}, *${"abcdefgh"[i]}, *${"abcdefgh"[i]}, *${"abcdefgh"[i]}, *${"abcdefgh"[i]}, *${"abcdefgh"[i]}, *${"abcdefgh"[i]}]`)].join("\n");
    const err = refusal(() => parseSkillMd(md(`name: a\ndescription: x\n${bomb}`)));
    expect(err.extra.errors[0]!.type).toBe("yaml_invalid");
  });

  it("accepts CRLF line ends and a byte-order mark", () => {
    const doc = parseSkillMd("\uFEFF---\r\nname: crlf\r\ndescription: Windows line ends.\r\n---\r\n\r\nBody line.\r\n");
    expect(doc).toMatchObject({ name: "crlf", description: "Windows line ends.", body: "Body line." });
  });
});

describe("this service's metadata", () => {
  it("reads versions as semantic versions", () => {
    expect([semverOf("1.0"), semverOf("2"), semverOf("v1.2.3"), semverOf("1.2.3-beta.1"), semverOf("latest"), semverOf(undefined)]).toEqual(["1.0.0", "2.0.0", "1.2.3", "1.2.3", null, null]);
  });

  it("splits trigger keywords on commas, trimmed, without repeats in any case", () => {
    expect(keywordsOf(" release notes, Changelog ,, changelog, what  changed ")).toEqual(["release notes", "Changelog", "what changed"]);
  });

  it("takes the display name, version, category, icon and keywords from metadata, with defaults", () => {
    const doc = parseSkillMd(md("name: jtbd-lite\ndescription: Jobs.\nmetadata:\n  author: me"));
    expect(contentOf(doc, {})).toMatchObject({ slug: "jtbd-lite", name: "Jtbd lite", version: "1.0.0", category: null, icon: null, trigger_keywords: [], extra_metadata: { author: "me" } });
  });
});

describe("writing a skill", () => {
  const skill: SkillContent = {
    slug: "churn-interview-debrief",
    name: "Churn interview debrief",
    description: "Debrief churn interviews: why people left, in their words. Use when the user asks about churn interviews: a: colon, # hash, 'quotes' and \"double\" ones.",
    category: "research",
    icon: "🧯",
    trigger_keywords: ["churn interviews", "why customers left"],
    version: "2.3.1",
    instructions_md: "# Debrief\n\n1. Read each interview.\n2. ---\n\nKeep quotes verbatim.",
    sample_output_md: "# Churn debrief\n\n- Price",
    output_template_md: "# Churn debrief: {{period}}\n\n## Reasons",
    license: "MIT",
    compatibility: "Any agent that reads Agent Skills",
    allowed_tools: ["search_insights", "read_source_text"],
    extra_metadata: { author: "research-ops" },
  };

  it("renders only the format's top-level fields, and parses back to the same skill", () => {
    const text = renderSkillMd(skill);
    expect(parseSkillMd(text, ["SKILL.md"], skill.slug).name).toBe(skill.slug);
    expect(text.split("\n---\n")[0]!.split("\n").filter((l) => /^[^\s-][^:]*:/.test(l)).map((l) => l.split(":")[0])).toEqual(["name", "description", "license", "compatibility", "metadata", "allowed-tools"]);
    const files = renderSkillFolder(skill);
    expect(Object.keys(files).sort()).toEqual(["SKILL.md", "assets/sample-output.md", "assets/template.md"]);
    expect(readSkillFolder(files, ["x"], skill.slug)).toEqual({ content: skill, unused: [] });
  });

  it("finds differently named assets and reports files it does not use", () => {
    const files = { "SKILL.md": renderSkillMd({ ...skill, sample_output_md: "", output_template_md: "" }), "assets/report-template.md": "T", "assets/example.md": "E", "scripts/run.py": "print(1)", "references/REFERENCE.md": "R" };
    const { content, unused } = readSkillFolder(files, ["x"]);
    expect([content.output_template_md, content.sample_output_md]).toEqual(["T", "E"]);
    expect(unused).toEqual(["references/REFERENCE.md", "scripts/run.py"]);
  });

  it("refuses a folder without SKILL.md", () => {
    expect(refusal(() => readSkillFolder({ "README.md": "x" }, ["body", "file"])).extra.errors[0]!.loc).toEqual(["body", "file"]);
  });
});

describe("templateSections", () => {
  it("gives a template's ## headings in order, without placeholders or guidance, marking optional ones", () => {
    const template = "# Title {{x}}\n\n## Summary\n\ntext\n\n### Sub\n\n## Release {{n}} — walking skeleton\n\n## Known issues <!-- optional: omit when none -->\n";
    expect(templateSections(template)).toEqual([
      { heading: "Summary", optional: false },
      { heading: "Release — walking skeleton", optional: false },
      { heading: "Known issues", optional: true },
    ]);
  });
});
