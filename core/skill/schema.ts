import * as z from "zod";
import { jsonObject } from "../json-object";
import { DESCRIPTION_MAX, NAME_MAX, SLUG_PATTERN } from "./limits";

/**
 * Words of the skills paths: as slugs they would make two routes match one path (spec 01 has both
 * `POST /api/skills/install/{slug}` and `POST /api/skills/{slug}/feedback`), so none can be a skill's slug.
 */
export const RESERVED_SLUGS: ReadonlySet<string> = new Set(["library", "workspace", "install", "custom", "import", "export", "feedback"]);

/**
 * A skill's slug (spec 01 Skill: unique, URL-safe): the Agent Skills `name` rule, kept to ASCII, at most 64
 * characters.
 */
export const SkillSlug = z
  .string()
  .min(1)
  .max(NAME_MAX)
  .regex(SLUG_PATTERN, "lowercase letters a-z, digits and single hyphens, not starting or ending with a hyphen")
  .refine((s) => !RESERVED_SLUGS.has(s), "this word is part of the skills paths (/api/skills/<word>/...) and cannot be a slug")
  .describe("URL-safe slug: lowercase letters, digits and single hyphens, at most 64 characters; not library, workspace, install, custom, import, export or feedback");

/** Longest display name, instructions and asset texts of a custom skill, in characters (far under DynamoDB's 400 KB item). */
export const SKILL_LIMITS = { name: 100, instructions: 50_000, asset: 20_000, keywords: 20, keyword: 60, category: 50, icon: 64, feedback: 2_000 } as const;

/** Spec 01 Skill, without the Markdown bodies: what the library list shows. */
export const SkillSummary = z
  .object({
    id: z.uuid(),
    slug: z.string(),
    name: z.string(),
    description: z.string(),
    category: z.string().nullable(),
    icon: z.string().nullable(),
    is_official: z.boolean(),
    trigger_keywords: z.array(z.string()),
    usage_count: z.int().describe("installations across workspaces"),
    version: z.string().describe("semantic version"),
    is_installed: z.boolean().nullable().describe("whether the workspace named by workspace_id has it installed; null when none was named"),
  })
  .meta({ id: "SkillSummary" });
export type SkillSummary = z.infer<typeof SkillSummary>;

/** Spec 01 Skill in full, plus the Agent Skills fields a skill may carry and, for a custom skill, its author workspace. */
export const SkillDetail = SkillSummary.extend({
  instructions_md: z.string(),
  sample_output_md: z.string(),
  output_template_md: z.string(),
  license: z.string().nullable(),
  compatibility: z.string().nullable(),
  workspace_id: z.uuid().nullable().describe("the authoring workspace of a custom skill; null for an official one"),
  created_at: z.string().nullable(),
  updated_at: z.string().nullable(),
}).meta({ id: "Skill" });
export type SkillDetail = z.infer<typeof SkillDetail>;

/** Spec 01 Installed skill, plus how often the copilot activated it. */
export const InstalledSkill = z
  .object({
    id: z.uuid(),
    skill: SkillDetail,
    is_enabled: z.boolean(),
    config: z.record(z.string(), z.unknown()),
    installed_at: z.string(),
    last_used_at: z.string().nullable(),
    activation_count: z.int().describe("copilot runs that loaded it"),
    texts_omitted: z
      .boolean()
      .describe(
        "true when the list left this skill's instructions_md, sample_output_md and output_template_md empty to fit one response (GET /api/skills/library/{slug}?workspace_id= gives them); always false outside GET /api/skills/workspace",
      ),
  })
  .meta({ id: "InstalledSkill" });
export type InstalledSkill = z.infer<typeof InstalledSkill>;

/** Spec 01 Skill feedback. */
export const SkillFeedback = z
  .object({
    id: z.uuid(),
    skill_slug: z.string(),
    rating: z.int().min(1).max(5),
    feedback_text: z.string().nullable(),
    created_at: z.string(),
  })
  .meta({ id: "SkillFeedback" });
export type SkillFeedback = z.infer<typeof SkillFeedback>;

export const SkillSlugParams = z.object({ slug: SkillSlug });
export const OptionalWorkspaceQuery = z.object({ workspace_id: z.uuid().optional() }).strict();
export const WorkspaceQuery = z.object({ workspace_id: z.uuid() }).strict();

/** An installed skill's settings: a bounded free-form object (docs/decisions.md "Free-form JSON objects"). */
const SkillConfig = jsonObject({ maxBytes: 8 * 1024, maxDepth: 4, maxKeys: 50, maxKeyLength: 64 });

/** `POST /api/skills/install/{slug}`. */
export const InstallInput = z.object({ workspace_id: z.uuid(), config: SkillConfig.optional() }).strict().meta({ id: "InstallSkillInput" });
export type InstallInput = z.infer<typeof InstallInput>;

/** `PATCH /api/skills/install/{slug}`: at least one of is_enabled and config. */
export const UpdateInstallInput = z
  .object({ workspace_id: z.uuid(), is_enabled: z.boolean().optional(), config: SkillConfig.optional() })
  .strict()
  .refine((v) => v.is_enabled !== undefined || v.config !== undefined, { message: "give is_enabled or config" })
  .meta({ id: "UpdateInstalledSkillInput" });
export type UpdateInstallInput = z.infer<typeof UpdateInstallInput>;

const keyword = z
  .string()
  .trim()
  .min(1)
  .max(SKILL_LIMITS.keyword)
  .refine((k) => !k.includes(","), "a trigger keyword may not contain a comma (they travel comma-separated in SKILL.md metadata)");

/** Trigger keywords: trimmed, repeats in any case dropped (first spelling kept). */
const Keywords = z
  .array(keyword)
  .max(SKILL_LIMITS.keywords)
  .transform((ks) => ks.filter((k, i) => ks.findIndex((o) => o.toLowerCase() === k.toLowerCase()) === i));

const fields = {
  name: z.string().trim().min(1).max(SKILL_LIMITS.name),
  description: z.string().trim().min(1).max(DESCRIPTION_MAX),
  instructions_md: z.string().trim().min(1).max(SKILL_LIMITS.instructions),
  category: z.string().trim().min(1).max(SKILL_LIMITS.category),
  icon: z.string().trim().min(1).max(SKILL_LIMITS.icon),
  trigger_keywords: Keywords,
  sample_output_md: z.string().trim().max(SKILL_LIMITS.asset),
  output_template_md: z.string().trim().max(SKILL_LIMITS.asset),
};

/** `POST /api/skills/custom` (spec 01), plus the sample output and output template a skill carries. */
export const CreateCustomInput = z
  .object({
    workspace_id: z.uuid(),
    slug: SkillSlug,
    name: fields.name,
    description: fields.description,
    instructions_md: fields.instructions_md,
    category: fields.category.optional(),
    icon: fields.icon.optional(),
    trigger_keywords: fields.trigger_keywords.default([]),
    sample_output_md: fields.sample_output_md.default(""),
    output_template_md: fields.output_template_md.default(""),
  })
  .strict()
  .meta({ id: "CreateCustomSkillInput" });
export type CreateCustomInput = z.infer<typeof CreateCustomInput>;

/** `PUT /api/skills/custom/{slug}` (spec 01): the fields given replace the stored ones; category and icon may be cleared with null. */
export const UpdateCustomInput = z
  .object({
    workspace_id: z.uuid(),
    name: fields.name.optional(),
    description: fields.description.optional(),
    instructions_md: fields.instructions_md.optional(),
    category: fields.category.nullable().optional(),
    icon: fields.icon.nullable().optional(),
    trigger_keywords: fields.trigger_keywords.optional(),
    sample_output_md: fields.sample_output_md.optional(),
    output_template_md: fields.output_template_md.optional(),
  })
  .strict()
  .refine((v) => Object.keys(v).some((k) => k !== "workspace_id"), { message: "give at least one field to change" })
  .meta({ id: "UpdateCustomSkillInput" });
export type UpdateCustomInput = z.infer<typeof UpdateCustomInput>;

/** `POST /api/skills/{slug}/feedback` (spec 01 Limits: rating 1 to 5). */
export const FeedbackInput = z
  .object({
    workspace_id: z.uuid(),
    rating: z.int().min(1).max(5),
    feedback_text: z.string().trim().max(SKILL_LIMITS.feedback).optional(),
  })
  .strict()
  .meta({ id: "SkillFeedbackInput" });
export type FeedbackInput = z.infer<typeof FeedbackInput>;

export const RemovedSkill = z.object({ status: z.enum(["uninstalled", "deleted"]), slug: z.string() }).meta({ id: "RemovedSkill" });

/** Largest skill import accepted: a zip of the folder or a lone SKILL.md. */
export const IMPORT_MAX_BYTES = 1024 * 1024;

/** `POST /api/skills/import` (multipart): the workspace, the file (a zip of the skill folder, or SKILL.md), an optional slug. */
export const ImportBody = z
  .object({
    workspace_id: z.uuid(),
    file: z
      .object({
        filename: z.string(),
        mimetype: z.string(),
        content: z.instanceof(Buffer).meta({ type: "string", format: "binary" }),
        truncated: z.boolean().optional(),
      })
      .describe("a .zip of the skill folder (SKILL.md and assets/), or a SKILL.md on its own"),
    slug: SkillSlug.optional().describe("import under this slug instead of the SKILL.md name (the skill is renamed)"),
  })
  .strict()
  .meta({ id: "ImportSkillBody" });
export type ImportBody = z.infer<typeof ImportBody>;

export const ImportResult = z
  .object({
    skill: SkillDetail,
    ignored_files: z.array(z.string()).describe("files of the folder this service does not use (scripts, references, other assets)"),
  })
  .meta({ id: "ImportSkillResult" });
export type ImportResult = z.infer<typeof ImportResult>;

/** The zip of an exported skill folder. */
export const SkillArchive = z.instanceof(Buffer).meta({ type: "string", format: "binary", id: "SkillArchive" });
