/**
 * The open Agent Skills format (agentskills.io/specification; DESIGN.md 6.6): a skill is a folder holding `SKILL.md`
 * (YAML front matter, then Markdown instructions) and optional `assets/`, `references/`, `scripts/`. Official skills
 * (core/skill/official/<slug>/), exports and imports all go through this one parser and this one writer, so what we
 * ship, what we export and what we accept obey the same rules.
 *
 * Front matter (the format's six fields, nothing else): `name` (1-64 characters: lowercase letters, digits and single
 * hyphens, not at either end; equal to the folder's name), `description` (1-1,024 characters), optional `license`
 * (at most 500), `compatibility` (at most 500), `metadata` (a map of string values, {@link METADATA_LIMITS}) and
 * `allowed-tools` ({@link ALLOWED_TOOLS_LIMITS}). The format bounds only name, description and compatibility; the
 * others are bounded here because an imported skill is stored as one DynamoDB item (400 KB). Any other top-level field is
 * refused, naming it, as the reference validator (skills-ref) does. This service's own properties travel in
 * `metadata` under the keys of {@link META}: the display name, the semantic version, category, icon and the trigger
 * keywords (comma-separated, since metadata values are strings).
 *
 * `name` is kept to ASCII (the reference validator also allows other lowercase letters): it is our slug, a URL path
 * segment (spec 01 Skill: "unique, URL-safe").
 */
import { parseDocument, stringify } from "yaml";
import { Errors, type FieldError } from "../error";

import { ALLOWED_TOOLS_LIMITS, COMPATIBILITY_MAX, DESCRIPTION_MAX, LICENSE_MAX, METADATA_LIMITS, NAME_MAX, SLUG_PATTERN } from "./limits";

export { ALLOWED_TOOLS_LIMITS, COMPATIBILITY_MAX, DESCRIPTION_MAX, LICENSE_MAX, METADATA_LIMITS, NAME_MAX, SLUG_PATTERN };

/** The front matter's fields (Agent Skills specification); any other top-level key is refused. */
export const FRONT_MATTER_FIELDS = ["name", "description", "license", "compatibility", "metadata", "allowed-tools"] as const;

/** This service's keys inside `metadata` (values are strings, as the format requires). */
export const META = {
  displayName: "display-name",
  version: "version",
  category: "category",
  icon: "icon",
  /** Comma-separated phrases that activate the skill when a request contains them. */
  triggers: "trigger-keywords",
} as const;

/** Where the sample output and the output template live in a skill folder. */
export const ASSET_PATHS = { sample: "assets/sample-output.md", template: "assets/template.md" } as const;

/** A parsed SKILL.md. */
export interface SkillDocument {
  name: string;
  description: string;
  license: string | null;
  compatibility: string | null;
  /** `metadata`, every value a string. */
  metadata: Record<string, string>;
  /** `allowed-tools` as written (a space-delimited string or a list), kept for the round trip; our agent has its own tools. */
  allowedTools: string | string[] | null;
  /** The Markdown after the front matter: the instructions the agent follows. */
  body: string;
}

/** A skill's content as this service stores it (spec 01 Skill, plus the format's optional fields). */
export interface SkillContent {
  slug: string;
  name: string;
  description: string;
  category: string | null;
  icon: string | null;
  trigger_keywords: string[];
  /** Semantic version, `MAJOR.MINOR.PATCH`. */
  version: string;
  instructions_md: string;
  sample_output_md: string;
  output_template_md: string;
  license: string | null;
  compatibility: string | null;
  allowed_tools: string | string[] | null;
  /** Metadata keys beyond {@link META}, kept as given so an imported skill exports as it came. */
  extra_metadata: Record<string, string>;
}

/** The problems of a name as a slug (empty when it is one). */
export function slugProblems(name: string): string[] {
  const problems: string[] = [];
  if (name.length === 0) return ["must not be empty"];
  if (name.length > NAME_MAX) problems.push(`must be at most ${NAME_MAX} characters (it has ${name.length})`);
  if (!SLUG_PATTERN.test(name)) {
    problems.push("may hold only lowercase letters a-z, digits and single hyphens, and must not start or end with a hyphen");
  }
  return problems;
}

const FRONT_MATTER = /^\uFEFF?---[ \t]*\r?\n(?:([\s\S]*?)\r?\n)?---[ \t]*(?:\r?\n|$)([\s\S]*)$/;

const isScalar = (v: unknown): v is string | number | boolean => typeof v === "string" || typeof v === "number" || typeof v === "boolean";

/**
 * Parse and validate a SKILL.md against the Agent Skills rules.
 * @param text the file's text (UTF-8 decoded)
 * @param where the location prefix of the 422's errors, e.g. `["body", "file", "SKILL.md"]`
 * @param folder the name of the folder holding it, when it has one: `name` must equal it (Agent Skills)
 * @returns the document; `body` with surrounding blank lines trimmed
 * @throws AppError VALIDATION_ERROR (422) listing every problem found, each with its `loc`; unknown top-level fields
 *   are named in the detail and one error each (`type: "unknown_field"`)
 */
export function parseSkillMd(text: string, where: (string | number)[] = ["SKILL.md"], folder?: string): SkillDocument {
  const match = FRONT_MATTER.exec(text);
  if (!match) {
    throw Errors.validation(
      [{ loc: [...where], msg: "SKILL.md must open with YAML front matter between two --- lines", type: "front_matter_missing" }],
      "SKILL.md has no front matter: it must open with a --- line, the YAML fields, and a closing --- line",
    );
  }
  const [, yamlText = "", rest = ""] = match;
  const doc = parseDocument(yamlText, { uniqueKeys: true, prettyErrors: false });
  if (doc.errors.length) {
    throw Errors.validation(
      doc.errors.map((e) => ({ loc: [...where, "frontmatter"], msg: e.message.split("\n")[0]!, type: "yaml_invalid" })),
      `SKILL.md front matter is not valid YAML: ${doc.errors[0]!.message.split("\n")[0]}`,
    );
  }
  // Aliases are expanded by toJS: a bound keeps a "billion laughs" document from growing without limit.
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: 20 });
  } catch (err) {
    const msg = (err as Error).message.split("\n")[0]!;
    throw Errors.validation([{ loc: [...where, "frontmatter"], msg, type: "yaml_invalid" }], `SKILL.md front matter cannot be read: ${msg}`);
  }
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    throw Errors.validation([{ loc: [...where, "frontmatter"], msg: "front matter must be a mapping of fields", type: "front_matter_invalid" }], "SKILL.md front matter must be a mapping of fields");
  }
  const fm = data as Record<string, unknown>;
  const errors: FieldError[] = [];
  const at = (field: string) => [...where, "frontmatter", field];

  const unknown = Object.keys(fm).filter((k) => !(FRONT_MATTER_FIELDS as readonly string[]).includes(k));
  for (const key of unknown) {
    errors.push({ loc: at(key), msg: `unknown top-level field "${key}"; the format allows ${FRONT_MATTER_FIELDS.join(", ")} (put your own keys under metadata)`, type: "unknown_field" });
  }

  const name = fm.name;
  if (typeof name !== "string" || name.trim() === "") errors.push({ loc: at("name"), msg: "name is required: a non-empty string", type: "missing" });
  else {
    for (const p of slugProblems(name)) errors.push({ loc: at("name"), msg: `name ${p}`, type: "name_invalid" });
    if (folder !== undefined && folder !== name) errors.push({ loc: at("name"), msg: `name "${name}" must equal its folder's name "${folder}"`, type: "name_folder_mismatch" });
  }

  const description = fm.description;
  if (typeof description !== "string" || description.trim() === "") errors.push({ loc: at("description"), msg: "description is required: a non-empty string", type: "missing" });
  else if (description.length > DESCRIPTION_MAX) errors.push({ loc: at("description"), msg: `description must be at most ${DESCRIPTION_MAX} characters (it has ${description.length})`, type: "too_long" });

  const optionalString = (field: string, max?: number): string | null => {
    const v = fm[field];
    if (v === undefined || v === null) return null;
    if (typeof v !== "string" || v.trim() === "") {
      errors.push({ loc: at(field), msg: `${field} must be a non-empty string`, type: "string_type" });
      return null;
    }
    if (max !== undefined && v.length > max) errors.push({ loc: at(field), msg: `${field} must be at most ${max} characters (it has ${v.length})`, type: "too_long" });
    return v;
  };
  const license = optionalString("license", LICENSE_MAX);
  const compatibility = optionalString("compatibility", COMPATIBILITY_MAX);

  const metadata: Record<string, string> = {};
  if (fm.metadata !== undefined && fm.metadata !== null) {
    if (typeof fm.metadata !== "object" || Array.isArray(fm.metadata)) {
      errors.push({ loc: at("metadata"), msg: "metadata must be a mapping of keys to string values", type: "mapping_type" });
    } else {
      // The count and the total bound the keys beyond this service's own (META), which an export always writes: a
      // skill imported at the bounds exports and imports again.
      const ours = new Set<string>(Object.values(META));
      const entries = Object.entries(fm.metadata as Record<string, unknown>);
      const extra = entries.filter(([k]) => !ours.has(k)).length;
      if (extra > METADATA_LIMITS.keys) {
        errors.push({ loc: at("metadata"), msg: `metadata may hold at most ${METADATA_LIMITS.keys} keys besides ${[...ours].join(", ")} (it has ${extra})`, type: "too_many" });
      }
      let chars = 0;
      for (const [k, v] of entries.slice(0, METADATA_LIMITS.keys + ours.size)) {
        // Names of the keys in messages are cut: a key of any length is echoed back otherwise.
        const shown = k.length > METADATA_LIMITS.key ? `${k.slice(0, METADATA_LIMITS.key)}…` : k;
        if (k.length > METADATA_LIMITS.key) errors.push({ loc: [...at("metadata"), shown], msg: `metadata key "${shown}" must be at most ${METADATA_LIMITS.key} characters (it has ${k.length})`, type: "too_long" });
        // YAML reads `version: 1.0` as a number: scalars are taken as their text; nested values are refused.
        if (!isScalar(v)) {
          errors.push({ loc: [...at("metadata"), shown], msg: `metadata.${shown} must be a string (metadata maps keys to string values)`, type: "string_type" });
          continue;
        }
        const text = String(v);
        if (text.length > METADATA_LIMITS.value) errors.push({ loc: [...at("metadata"), shown], msg: `metadata.${shown} must be at most ${METADATA_LIMITS.value} characters (it has ${text.length})`, type: "too_long" });
        if (!ours.has(k)) chars += k.length + text.length;
        metadata[k] = text;
      }
      if (chars > METADATA_LIMITS.totalChars) errors.push({ loc: at("metadata"), msg: `metadata keys and values besides this service's must hold at most ${METADATA_LIMITS.totalChars} characters together (they have ${chars})`, type: "too_long" });
    }
  }

  let allowedTools: string | string[] | null = null;
  const tools = fm["allowed-tools"];
  if (tools !== undefined && tools !== null) {
    if (typeof tools === "string") allowedTools = tools;
    else if (Array.isArray(tools) && tools.every((t) => typeof t === "string")) allowedTools = tools as string[];
    else errors.push({ loc: at("allowed-tools"), msg: "allowed-tools must be a space-delimited string or a list of strings", type: "allowed_tools_type" });
    const list = typeof allowedTools === "string" ? allowedTools.split(/\s+/).filter(Boolean) : (allowedTools ?? []);
    if (list.length > ALLOWED_TOOLS_LIMITS.tools) {
      errors.push({ loc: at("allowed-tools"), msg: `allowed-tools may name at most ${ALLOWED_TOOLS_LIMITS.tools} tools (it has ${list.length})`, type: "too_many" });
    }
    const long = list.find((t) => t.length > ALLOWED_TOOLS_LIMITS.tool);
    if (long !== undefined) {
      errors.push({ loc: at("allowed-tools"), msg: `each of allowed-tools must be at most ${ALLOWED_TOOLS_LIMITS.tool} characters (one has ${long.length})`, type: "too_long" });
    }
  }

  if (errors.length) {
    const named = unknown.length ? `unknown top-level field${unknown.length > 1 ? "s" : ""} ${unknown.map((k) => `"${k}"`).join(", ")}` : "";
    const others = errors.filter((e) => e.type !== "unknown_field").map((e) => e.msg);
    throw Errors.validation(errors, `SKILL.md is not a valid Agent Skill: ${[named, ...others].filter(Boolean).join("; ")}`);
  }
  return {
    name: name as string,
    description: (description as string).trim(),
    license,
    compatibility,
    metadata,
    allowedTools,
    body: rest.replace(/^\s*\n/, "").trimEnd(),
  };
}

/** The version of a metadata value: a semantic version as is; "1" or "1.2" padded with zeros; anything else null. */
export function semverOf(value: string | undefined): string | null {
  const v = value?.trim().replace(/^v/i, "");
  if (!v) return null;
  if (/^\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]+)?$/.test(v)) return v.replace(/^(\d+)\.(\d+)\.(\d+).*$/, (_, a, b, c) => `${+a}.${+b}.${+c}`);
  const parts = /^(\d+)(?:\.(\d+))?$/.exec(v);
  return parts ? `${+parts[1]!}.${+(parts[2] ?? 0)}.0` : null;
}

/** Trigger keywords from their metadata text: comma-separated, trimmed, blanks and repeats (any case) dropped. */
export function keywordsOf(text: string | undefined): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const raw of (text ?? "").split(",")) {
    const k = raw.trim().replace(/\s+/g, " ");
    if (!k || seen.has(k.toLowerCase())) continue;
    seen.add(k.toLowerCase());
    out.push(k);
  }
  return out;
}

/** "opportunity-solution-tree" → "Opportunity solution tree": a display name for a skill that names none. */
const nameFromSlug = (slug: string) => slug.replace(/-/g, " ").replace(/^./, (c) => c.toUpperCase());

/**
 * A skill's content from its parsed SKILL.md and asset texts: `name` is the slug; the display name, version,
 * category, icon and trigger keywords come from `metadata` (version 1.0.0 when it names none, or none that reads
 * as a version); other metadata keys are kept for the round trip.
 */
export function contentOf(doc: SkillDocument, assets: { sample?: string; template?: string }): SkillContent {
  const m = doc.metadata;
  const ours = new Set<string>(Object.values(META));
  return {
    slug: doc.name,
    name: m[META.displayName]?.trim() || nameFromSlug(doc.name),
    description: doc.description,
    category: m[META.category]?.trim() || null,
    icon: m[META.icon]?.trim() || null,
    trigger_keywords: keywordsOf(m[META.triggers]),
    version: semverOf(m[META.version]) ?? "1.0.0",
    instructions_md: doc.body,
    sample_output_md: (assets.sample ?? "").trim(),
    output_template_md: (assets.template ?? "").trim(),
    license: doc.license,
    compatibility: doc.compatibility,
    allowed_tools: doc.allowedTools,
    extra_metadata: Object.fromEntries(Object.entries(m).filter(([k]) => !ours.has(k))),
  };
}

/**
 * The SKILL.md of a skill: the format's front matter (name = slug, description, license, compatibility, metadata with
 * this service's keys first, allowed-tools) and the instructions as the body. Parsing it back with
 * {@link parseSkillMd} and {@link contentOf} gives the same content.
 */
export function renderSkillMd(s: SkillContent): string {
  const metadata: Record<string, string> = {
    [META.displayName]: s.name,
    [META.version]: s.version,
    ...(s.category ? { [META.category]: s.category } : {}),
    ...(s.icon ? { [META.icon]: s.icon } : {}),
    ...(s.trigger_keywords.length ? { [META.triggers]: s.trigger_keywords.join(", ") } : {}),
    ...s.extra_metadata,
  };
  const fm: Record<string, unknown> = {
    name: s.slug,
    description: s.description,
    ...(s.license ? { license: s.license } : {}),
    ...(s.compatibility ? { compatibility: s.compatibility } : {}),
    metadata,
    ...(s.allowed_tools ? { "allowed-tools": s.allowed_tools } : {}),
  };
  // lineWidth 0: no folding, so a long description stays one line and reads back byte for byte.
  return `---\n${stringify(fm, { lineWidth: 0 })}---\n\n${s.instructions_md}\n`;
}

/** The files of a skill folder (paths relative to the folder): SKILL.md and, when they have text, the two assets. */
export function renderSkillFolder(s: SkillContent): Record<string, string> {
  return {
    "SKILL.md": renderSkillMd(s),
    ...(s.sample_output_md ? { [ASSET_PATHS.sample]: `${s.sample_output_md}\n` } : {}),
    ...(s.output_template_md ? { [ASSET_PATHS.template]: `${s.output_template_md}\n` } : {}),
  };
}

/**
 * Read a skill folder's files into its content. The sample output and the template are `assets/sample-output.md` and
 * `assets/template.md`; a folder written elsewhere may name them otherwise, so failing those exact names the first
 * Markdown asset whose name says "template", and the first that says "sample" or "example", are taken.
 * @param files the folder's text files by relative path (`SKILL.md`, `assets/...`)
 * @param folder the folder's name, when the files came in one (`name` must equal it)
 * @returns the content and the paths it did not use (scripts, references, other assets: this agent runs no scripts)
 * @throws AppError VALIDATION_ERROR (422) when SKILL.md is missing or invalid
 */
export function readSkillFolder(files: Record<string, string>, where: (string | number)[], folder?: string): { content: SkillContent; unused: string[] } {
  const md = files["SKILL.md"];
  if (md === undefined) {
    throw Errors.validation([{ loc: [...where], msg: "a skill folder must hold SKILL.md at its top", type: "skill_md_missing" }], "No SKILL.md found at the top of the skill folder");
  }
  const doc = parseSkillMd(md, [...where, "SKILL.md"], folder);
  const assets = Object.keys(files).filter((p) => p.startsWith("assets/") && /\.(md|markdown|txt)$/i.test(p)).sort();
  const pick = (exact: string, like: RegExp) => (files[exact] !== undefined ? exact : assets.find((p) => like.test(p.slice("assets/".length))));
  const templatePath = pick(ASSET_PATHS.template, /template/i);
  const samplePath = pick(ASSET_PATHS.sample, /sample|example/i);
  const content = contentOf(doc, { sample: samplePath ? files[samplePath] : undefined, template: templatePath ? files[templatePath] : undefined });
  const used = new Set(["SKILL.md", templatePath, samplePath].filter(Boolean) as string[]);
  return { content, unused: Object.keys(files).filter((p) => !used.has(p)).sort() };
}

/** One `##` section of an output template. */
export interface TemplateSection {
  /** The heading's text without `## `, placeholders and comments ("Ranking"; "Release 1 — walking skeleton"). */
  heading: string;
  /** Marked `<!-- optional ... -->` on its heading line: an answer may leave it out when it would be empty. */
  optional: boolean;
}

/**
 * The sections an answer that follows this output template must have, in order: its `##` headings, with `{{...}}`
 * placeholders and `<!-- ... -->` guidance removed. For checking an answer against its skill's template (the harness
 * contract) and for an engine that composes answers section by section.
 */
export function templateSections(template: string): TemplateSection[] {
  return template
    .split("\n")
    .filter((line) => /^##\s/.test(line))
    .map((line) => ({
      heading: line.replace(/^##\s+/, "").replace(/<!--.*?-->/g, "").replace(/\{\{[^}]*\}\}/g, "").replace(/\s+/g, " ").trim(),
      optional: /<!--\s*optional/i.test(line),
    }));
}
