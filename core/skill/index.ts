/**
 * Skills (spec 01 Skill and the Skills endpoints; spec 02 plan flags has_skills, has_custom_skills,
 * max_custom_skills; DESIGN.md 6.6). Official skills are files compiled into the code (library.ts); custom skills,
 * installations, feedback and the custom-skills counter are items of the workspace's partition (skill.entity.ts).
 *
 * Rules: a slug names one skill everywhere (official slugs are reserved; a custom slug is claimed by one workspace);
 * a custom skill is authored by one workspace, installed there on creation, and edited or deleted only by it; each
 * edit bumps its semantic version; `usage_count` counts installations across workspaces; feedback is one rating per
 * user, workspace and skill. See docs/decisions.md "Skills" for the choices the spec leaves open.
 */
import { randomUUID } from "node:crypto";
import { createWriteTransaction, type EntityItem } from "electrodb";
import { QueryCommand } from "@aws-sdk/lib-dynamodb";
import { AppError, Errors, type FieldError } from "../error";
import { Config } from "../config";
import { serviceLog } from "../log";
import { fitResponse, LIST_RESPONSE_BYTES, wireBytes } from "../response-size";
import { db } from "../db/service";
import { dynamoClient } from "../db/client";
import { cancelCodes, isConditionalFailure } from "../db/errors";
import { deleteKeys, partitionKeys, queryPrefix } from "../db/partition";
import { conflictPause } from "../db/transact";
import { requireMember, partitionOf } from "../workspace";
import { requireFeature } from "../billing/gates";
import { COUNTED_TRIES, limitsOfWorkspace } from "../billing/counters";
import { officialSkill, officialSkills, type OfficialSkill } from "./library";
import type { SkillContent } from "./format";
import {
  CreateCustomInput,
  type FeedbackInput,
  type ImportBody,
  type ImportResult,
  type InstallInput,
  type InstalledSkill,
  type SkillDetail,
  type SkillFeedback,
  type SkillSummary,
  type UpdateCustomInput,
  type UpdateInstallInput,
} from "./schema";
import type { CustomSkillEntity, SkillInstallEntity } from "./skill.entity";

export * from "./schema";

type CustomItem = EntityItem<CustomSkillEntity>;
type InstallItem = EntityItem<SkillInstallEntity>;

const log = () => serviceLog();

/** A skill as the operations see it: its content, and where it comes from. */
export interface SkillRecord extends SkillContent {
  id: string;
  is_official: boolean;
  /** The authoring workspace of a custom skill; null for an official one. */
  workspace_id: string | null;
  created_at: string | null;
  updated_at: string | null;
}

const fromOfficial = (s: OfficialSkill): SkillRecord => ({ ...s, is_official: true, workspace_id: null, created_at: null, updated_at: null });

/** `allowed_tools` is stored as JSON text: SKILL.md allows a string or a list. */
const toolsOf = (text: string | undefined): string | string[] | null => {
  if (!text) return null;
  const v = JSON.parse(text) as unknown;
  return typeof v === "string" || Array.isArray(v) ? (v as string | string[]) : null;
};

const fromCustom = (c: CustomItem): SkillRecord => ({
  id: c.id,
  slug: c.slug,
  name: c.name,
  description: c.description,
  category: c.category ?? null,
  icon: c.icon ?? null,
  trigger_keywords: c.trigger_keywords ?? [],
  version: c.version,
  instructions_md: c.instructions_md,
  sample_output_md: c.sample_output_md ?? "",
  output_template_md: c.output_template_md ?? "",
  license: c.license ?? null,
  compatibility: c.compatibility ?? null,
  allowed_tools: toolsOf(c.allowed_tools),
  extra_metadata: (c.extra_metadata as Record<string, string> | undefined) ?? {},
  is_official: false,
  workspace_id: c.workspace_id,
  created_at: c.created_at,
  updated_at: c.updated_at,
});

const summaryOf = (r: SkillRecord, usage_count: number, is_installed: boolean | null): SkillSummary => ({
  id: r.id,
  slug: r.slug,
  name: r.name,
  description: r.description,
  category: r.category,
  icon: r.icon,
  is_official: r.is_official,
  trigger_keywords: r.trigger_keywords,
  usage_count,
  version: r.version,
  is_installed,
});

const detailOf = (r: SkillRecord, usage_count: number, is_installed: boolean | null): SkillDetail => ({
  ...summaryOf(r, usage_count, is_installed),
  instructions_md: r.instructions_md,
  sample_output_md: r.sample_output_md,
  output_template_md: r.output_template_md,
  license: r.license,
  compatibility: r.compatibility,
  workspace_id: r.workspace_id,
  created_at: r.created_at,
  updated_at: r.updated_at,
});

// ---------------------------------------------------------------------------------------------------------------
// usage_count: installations across workspaces, counted on the installations' slug index (gsi2).

/** How long a container reuses a count (a popularity figure; this container's own installs refresh it at once). */
const USAGE_TTL_MS = 30_000;
const usageCache = new Map<string, { count: number; at: number }>();

/**
 * Installations of a skill across workspaces: a COUNT Query of its partition of the slug index, cached per container
 * for {@link USAGE_TTL_MS}. Exact after a workspace is deleted (its installations leave the index with it), which a
 * counter item would not be.
 */
async function usageCount(slug: string): Promise<number> {
  const hit = usageCache.get(slug);
  if (hit && Date.now() - hit.at < USAGE_TTL_MS) return hit.count;
  let count = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const page = await dynamoClient().send(
      new QueryCommand({
        TableName: Config.tableName(),
        IndexName: "gsi2",
        KeyConditionExpression: "gsi2pk = :pk",
        ExpressionAttributeValues: { ":pk": `skillinstalls#${slug}` },
        Select: "COUNT",
        ExclusiveStartKey: start,
      }),
    );
    count += page.Count ?? 0;
    start = page.LastEvaluatedKey;
  } while (start);
  usageCache.set(slug, { count, at: Date.now() });
  return count;
}
const forgetUsage = (slug: string) => usageCache.delete(slug);

// ---------------------------------------------------------------------------------------------------------------
// Reads.

async function customItem(workspaceId: string, slug: string): Promise<CustomItem | null> {
  return (await db().entities.customSkill.get({ workspace_id: workspaceId, slug }).go({ consistent: true })).data;
}

async function installItem(workspaceId: string, slug: string): Promise<InstallItem | null> {
  return (await db().entities.skillInstall.get({ workspace_id: workspaceId, slug }).go({ consistent: true })).data;
}

async function installsOf(workspaceId: string): Promise<InstallItem[]> {
  return (await db().entities.skillInstall.query.byWorkspace({ workspace_id: workspaceId }).go({ pages: "all", consistent: true })).data;
}

/**
 * The workspace's installations and custom skills in ONE strongly consistent Query: both live in the partition's
 * `skill#` range (`skill#install#<slug>`, `skill#custom#<slug>`, core/skill/skill.entity.ts), each entity keeping
 * its own items (ElectroDB's ownership check on parse).
 */
async function skillItemsOf(workspaceId: string): Promise<{ installs: InstallItem[]; customs: CustomItem[] }> {
  const Items = await queryPrefix(partitionOf(workspaceId), "skill#");
  const e = db().entities;
  return {
    installs: e.skillInstall.parse({ Items }, { ignoreOwnership: false }).data as InstallItem[],
    customs: e.customSkill.parse({ Items }, { ignoreOwnership: false }).data as CustomItem[],
  };
}

/**
 * The skill a slug names for a workspace: the workspace's own custom skill, else the official one.
 * @returns undefined when neither exists (a custom skill of another workspace is not visible here)
 */
async function resolve(slug: string, workspaceId?: string): Promise<SkillRecord | undefined> {
  if (workspaceId) {
    const custom = await customItem(workspaceId, slug);
    if (custom) return fromCustom(custom);
  }
  const official = officialSkill(slug);
  return official ? fromOfficial(official) : undefined;
}

const notFound = (slug: string) => new AppError("NOT_FOUND", `Skill ${slug} not found`);

/** usage_count of a record: a custom skill lives in one workspace (0 or 1 installation); an official one is counted. */
async function usageOf(r: SkillRecord): Promise<number> {
  if (!r.is_official) return (await installItem(r.workspace_id!, r.slug)) ? 1 : 0;
  return usageCount(r.slug);
}

/**
 * The official library (spec 01 `GET /api/skills/library`): every official skill, with `is_installed` for the named
 * workspace (null when none is named).
 * @throws AppError FORBIDDEN (403) when a workspace is named and the caller is not a member.
 */
export async function library(userId: string, workspaceId?: string): Promise<SkillSummary[]> {
  let installed: Set<string> | undefined;
  if (workspaceId) {
    await requireMember(userId, workspaceId);
    installed = new Set((await installsOf(workspaceId)).filter((i) => i.is_official).map((i) => i.slug));
  }
  const skills = officialSkills();
  const counts = await Promise.all(skills.map((s) => usageCount(s.slug)));
  return skills.map((s, i) => summaryOf(fromOfficial(s), counts[i]!, installed ? installed.has(s.slug) : null));
}

/**
 * One skill in full (spec 01 `GET /api/skills/library/{slug}`): an official skill, or, when the workspace is named,
 * that workspace's custom skill of this slug.
 * @throws AppError NOT_FOUND (404); FORBIDDEN (403) when a workspace is named and the caller is not a member.
 */
export async function libraryDetail(userId: string, slug: string, workspaceId?: string): Promise<SkillDetail> {
  if (workspaceId) await requireMember(userId, workspaceId);
  const record = await resolve(slug, workspaceId);
  if (!record) throw notFound(slug);
  const [usage, installed] = await Promise.all([usageOf(record), workspaceId ? installItem(workspaceId, slug) : Promise.resolve(undefined)]);
  return detailOf(record, usage, workspaceId ? !!installed : null);
}

const installedView = (item: InstallItem, record: SkillRecord, usage: number): InstalledSkill => ({
  id: item.id,
  skill: detailOf(record, usage, true),
  is_enabled: item.is_enabled,
  config: (item.config as Record<string, unknown> | undefined) ?? {},
  installed_at: item.installed_at,
  last_used_at: item.last_used_at ?? null,
  activation_count: item.activation_count ?? 0,
  texts_omitted: false,
});

/**
 * The skills installed in a workspace with their records, oldest installation first; an installation whose skill no
 * longer exists (an official skill dropped from a later release) is left out.
 */
async function installedRecords(workspaceId: string): Promise<{ item: InstallItem; record: SkillRecord }[]> {
  const { installs, customs } = await skillItemsOf(workspaceId);
  const bySlug = new Map(customs.map((c) => [c.slug, c]));
  return installs
    .flatMap((item) => {
      const custom = item.is_official ? undefined : bySlug.get(item.slug);
      const official = item.is_official ? officialSkill(item.slug) : undefined;
      const record = custom ? fromCustom(custom) : official ? fromOfficial(official) : undefined;
      return record ? [{ item, record }] : [];
    })
    .sort((a, b) => a.item.installed_at.localeCompare(b.item.installed_at) || a.record.slug.localeCompare(b.record.slug));
}

/**
 * An installed skill without its Markdown texts (instructions, sample output, output template), marked
 * `texts_omitted`: what the workspace list gives once full skills would pass what one answer may carry.
 */
const briefView = (v: InstalledSkill): InstalledSkill => ({ ...v, skill: { ...v.skill, instructions_md: "", sample_output_md: "", output_template_md: "" }, texts_omitted: true });

/**
 * The installed skills as one answer may carry them (`maxBytes` of core/response-size.ts `wireBytes`): every
 * installation, in order, each skill in full while that fits and without its Markdown texts after ({@link briefView}),
 * so the list stays whole (spec 01 gives an array, no pages) and a skill's texts are one
 * `GET /api/skills/library/{slug}?workspace_id=` away. Only when even the brief views pass the budget (hundreds of
 * skills with every field at its limit) is the list cut at the last that fits (`fitResponse`), and that is logged.
 */
export function fitInstalled(views: readonly InstalledSkill[], maxBytes = LIST_RESPONSE_BYTES): InstalledSkill[] {
  const briefs = views.map(briefView);
  const sizes = briefs.map(wireBytes);
  const briefTotal = sizes.reduce((a, b) => a + b, 0);
  if (briefTotal > maxBytes) {
    const kept = fitResponse(briefs, maxBytes);
    log().warn("installed skills cut to fit one response", { installed: views.length, listed: kept.length });
    return kept;
  }
  // Room left once every installation is listed briefly: skills get their texts back in order while it lasts.
  let room = maxBytes - briefTotal;
  return views.map((v, i) => {
    const extra = wireBytes(v) - sizes[i]!;
    if (extra > room) return briefs[i]!;
    room -= extra;
    return v;
  });
}

/**
 * Skills installed in a workspace (spec 01 `GET /api/skills/workspace`), oldest installation first, fitted to one
 * answer by {@link fitInstalled}: a skill whose texts did not fit comes with them empty and `texts_omitted` true.
 * @throws AppError FORBIDDEN (403) for a non-member.
 */
export async function installed(userId: string, workspaceId: string): Promise<InstalledSkill[]> {
  await requireMember(userId, workspaceId);
  const rows = await installedRecords(workspaceId);
  return fitInstalled(await Promise.all(rows.map(async ({ item, record }) => installedView(item, record, record.is_official ? await usageCount(record.slug) : 1))));
}

// ---------------------------------------------------------------------------------------------------------------
// Installation.

/**
 * Install a skill in a workspace (spec 01 `POST /api/skills/install/{slug}`; the route's plan gate is has_skills): an
 * official skill, or the workspace's own custom skill after it was uninstalled. Installing what is installed already
 * answers the existing installation (a retried request changes nothing).
 * @throws AppError NOT_FOUND (404) for an unknown slug or another workspace's custom skill, or a custom skill deleted
 *   meanwhile; FORBIDDEN (403); CONFLICT (409, retryable) when the write met another on the skill.
 */
export async function install(userId: string, slug: string, input: InstallInput): Promise<InstalledSkill> {
  const ws = input.workspace_id;
  await requireMember(userId, ws);
  const record = await resolve(slug, ws);
  if (!record) throw notFound(slug);
  let item: InstallItem | null;
  const fresh = { workspace_id: ws, slug, id: randomUUID(), is_official: record.is_official, is_enabled: true, config: input.config ?? {}, installed_by: userId };
  if (!record.is_official) {
    // A custom skill is installed only while it exists (the skill read, by its id): a deletion between the read and
    // this write would leave an installation of nothing, which a later skill of the slug would inherit.
    const written = { ...fresh, installed_at: new Date().toISOString(), activation_count: 0 };
    const result = await createWriteTransaction(db().pick("customSkill", "skillInstall"), ({ customSkill, skillInstall }) => [
      customSkill.check({ workspace_id: ws, slug }).where((a, op) => op.eq(a.id, record.id)).commit(),
      skillInstall.create(written).commit(),
    ]).go();
    const codes = result.canceled ? cancelCodes(result) : [];
    if (codes[0] === "ConditionalCheckFailed") throw notFound(slug);
    if (result.canceled && codes[1] !== "ConditionalCheckFailed") {
      throw new AppError("CONFLICT", `The skill ${slug} changed while it was installed; try again`, { retryable: true });
    }
    // Written: what was written (a re-read could find it removed since). Installed already: that installation.
    item = result.canceled ? await installItem(ws, slug) : (written as InstallItem);
  } else {
    try {
      // The installation as written: a re-read could miss it, uninstalled since.
      item = (await db().entities.skillInstall.create(fresh).go()).data as InstallItem;
    } catch (err) {
      if (!isConditionalFailure(err)) throw err;
      item = await installItem(ws, slug);
    }
  }
  forgetUsage(slug);
  // Installed already, and removed between the create and the read (an uninstall, a deletion of the custom skill).
  if (!item) throw notFound(slug);
  return installedView(item, record, await usageOf(record));
}

/**
 * Uninstall a skill (spec 01 `DELETE /api/skills/install/{slug}`). A custom skill stays authored and can be installed
 * again.
 * @throws AppError NOT_FOUND (404) when it is not installed in the workspace; FORBIDDEN (403).
 */
export async function uninstall(userId: string, slug: string, workspaceId: string): Promise<{ status: "uninstalled"; slug: string }> {
  await requireMember(userId, workspaceId);
  try {
    await db().entities.skillInstall.delete({ workspace_id: workspaceId, slug }).where((a, op) => op.exists(a.id)).go();
  } catch (err) {
    if (isConditionalFailure(err)) throw new AppError("NOT_FOUND", `Skill ${slug} is not installed in this workspace`);
    throw err;
  }
  forgetUsage(slug);
  return { status: "uninstalled", slug };
}

/**
 * Enable, disable or configure an installed skill (spec 01 `PATCH /api/skills/install/{slug}`).
 * @throws AppError NOT_FOUND (404) when it is not installed in the workspace; FORBIDDEN (403).
 */
export async function updateInstall(userId: string, slug: string, input: UpdateInstallInput): Promise<InstalledSkill> {
  const ws = input.workspace_id;
  await requireMember(userId, ws);
  const set = { ...(input.is_enabled !== undefined ? { is_enabled: input.is_enabled } : {}), ...(input.config !== undefined ? { config: input.config } : {}) };
  try {
    await db().entities.skillInstall.patch({ workspace_id: ws, slug }).set(set).go();
  } catch (err) {
    if (isConditionalFailure(err)) throw new AppError("NOT_FOUND", `Skill ${slug} is not installed in this workspace`);
    throw err;
  }
  const [item, record] = await Promise.all([installItem(ws, slug), resolve(slug, ws)]);
  if (!item || !record) throw new AppError("NOT_FOUND", `Skill ${slug} is not installed in this workspace`);
  return installedView(item, record, await usageOf(record));
}

// ---------------------------------------------------------------------------------------------------------------
// Custom skills.

const slugTaken = (slug: string) =>
  new AppError("CONFLICT", `The slug ${slug} is taken (slugs are unique across the official library and every workspace); choose another`, { slug });

const customLimitError = (current: number, limit: number, plan: string) =>
  new AppError("USAGE_LIMIT_EXCEEDED", `The ${plan} plan allows ${limit} custom skills per workspace and this workspace has ${current}; upgrade the plan for more`, {
    usage_type: "custom_skills", current, limit, plan,
  });

/**
 * A skill DynamoDB refused to store: the limits of the format (format.ts) and of a custom skill (schema.ts) keep one
 * under the 400 KB item, so this is a last guard, answered as the field problem it is rather than a 500 or a 409.
 */
const skillTooLarge = (slug: string) =>
  Errors.validation([{ loc: ["body"], msg: "the skill is larger than one skill may be stored", type: "too_large" }], `The skill ${slug} is too large to store; shorten its texts or front matter`);

/** True for DynamoDB's refusal of an item's size (a top-level ValidationException, or ElectroDB's error wrapping one). */
const isSizeRefusal = (err: unknown): boolean => {
  const e = ((err as { cause?: unknown } | null)?.cause ?? err) as { name?: string; message?: string } | null;
  return e?.name === "ValidationException" && /size/i.test(e.message ?? "");
};

/** A `.catch` that turns a size refusal into {@link skillTooLarge} and rethrows anything else. */
const refuseTooLarge = (slug: string) => (err: unknown): never => {
  throw isSizeRefusal(err) ? skillTooLarge(slug) : err;
};

/** Everything a custom skill is made of, as create and import give it. */
type NewCustom = Omit<SkillContent, "slug"> & { slug: string };

/**
 * The workspace that holds the claim on a slug, when that claim is live (its custom skill exists). A claim whose
 * workspace was deleted (its partition purged, the claim left behind) is stale: it names the workspace so the next
 * create can take it over under a condition on that name.
 */
async function claimOf(slug: string): Promise<{ live: string | null; stale: string | null }> {
  const { data } = await db().entities.skillSlug.get({ slug }).go({ consistent: true });
  if (!data) return { live: null, stale: null };
  return (await customItem(data.workspace_id, slug)) ? { live: data.workspace_id, stale: null } : { live: null, stale: data.workspace_id };
}

/**
 * The caller may author custom skills in the workspace: a member, on a plan with has_custom_skills (checked here as
 * well as on the create route, since an import is a create too).
 * @throws AppError FORBIDDEN (403: not a member, or the plan lacks has_custom_skills).
 */
async function mayAuthor(userId: string, workspaceId: string): Promise<void> {
  await requireMember(userId, workspaceId);
  await requireFeature({ userId, workspaceId }, "has_custom_skills");
}

/**
 * Author a custom skill in a workspace (the caller checked by {@link mayAuthor}) and install it there, counted against the plan's custom skills limit
 * atomically: the skill, its installation, the slug claim and the workspace's counter are one transaction, the counter
 * conditioned on the limit (core/billing/counters.ts pattern), so concurrent creates cannot pass it.
 */
async function author(userId: string, workspaceId: string, s: NewCustom): Promise<SkillDetail> {
  if (officialSkill(s.slug)) throw slugTaken(s.slug);
  for (let attempt = 0; attempt < COUNTED_TRIES; attempt++) {
    const [{ plan, limits }, counter, claim] = await Promise.all([
      limitsOfWorkspace(workspaceId),
      db().entities.skillCounter.get({ workspace_id: workspaceId }).go({ consistent: true }),
      claimOf(s.slug),
    ]);
    if (claim.live) throw slugTaken(s.slug);
    const limit = limits.max_custom_skills;
    // A workspace has no counter until its first custom skill: none existed before the counter did.
    const current = counter.data?.custom_skills ?? 0;
    if (limit !== null && current >= limit) throw customLimitError(current, limit, plan);
    const now = new Date().toISOString();
    const created: CustomItem = {
      workspace_id: workspaceId,
      slug: s.slug,
      id: randomUUID(),
      name: s.name,
      description: s.description,
      ...(s.category ? { category: s.category } : {}),
      ...(s.icon ? { icon: s.icon } : {}),
      trigger_keywords: s.trigger_keywords,
      version: s.version,
      instructions_md: s.instructions_md,
      sample_output_md: s.sample_output_md,
      output_template_md: s.output_template_md,
      ...(s.license ? { license: s.license } : {}),
      ...(s.compatibility ? { compatibility: s.compatibility } : {}),
      ...(s.allowed_tools ? { allowed_tools: JSON.stringify(s.allowed_tools) } : {}),
      extra_metadata: s.extra_metadata,
      created_by: userId,
      created_at: now,
      updated_at: now,
    };
    const result = await createWriteTransaction(db().pick("customSkill", "skillInstall", "skillSlug", "skillCounter"), ({ customSkill, skillInstall, skillSlug, skillCounter }) => [
      customSkill.create(created).commit(),
      skillInstall.put({ workspace_id: workspaceId, slug: s.slug, id: randomUUID(), is_official: false, is_enabled: true, config: {}, installed_by: userId, installed_at: now, activation_count: 0 }).commit(),
      claim.stale
        ? skillSlug.put({ slug: s.slug, workspace_id: workspaceId, created_at: now }).where((a, op) => op.eq(a.workspace_id, claim.stale!)).commit()
        : skillSlug.create({ slug: s.slug, workspace_id: workspaceId, created_at: now }).commit(),
      skillCounter
        .update({ workspace_id: workspaceId })
        .add({ custom_skills: 1 })
        .where((a, op) => (limit === null ? "" : `${op.notExists(a.custom_skills)} OR ${op.lt(a.custom_skills, limit)}`))
        .commit(),
    ]).go().catch(refuseTooLarge(s.slug));
    if (!result.canceled) {
      forgetUsage(s.slug);
      // The skill as written, not re-read: a deletion right after the commit must not turn the create into a 500.
      return detailOf(fromCustom(created), 1, true);
    }
    const codes = cancelCodes(result);
    if (codes[0] === "ConditionalCheckFailed" || codes[2] === "ConditionalCheckFailed") throw slugTaken(s.slug);
    // The item itself was refused (over DynamoDB's 400 KB): a retry can never succeed, so not a 409 "try again".
    if (codes.includes("ValidationError")) throw skillTooLarge(s.slug);
    if (codes[0] !== "None" || codes[1] !== "None" || codes[2] !== "None") throw new AppError("CONFLICT", "The skill could not be created; try again");
    // Only the counter refused: the limit was reached meanwhile (the next read says so), or a concurrent create moved it.
  }
  throw new AppError("SERVICE_UNAVAILABLE", "Too many custom skills are being created at once; try again", { retryable: true });
}

/**
 * Author a custom skill (spec 01 `POST /api/skills/custom`): version 1.0.0, installed in the authoring workspace.
 * @returns the skill detail (usage_count 1, is_installed true)
 * @throws AppError FORBIDDEN (403) for a non-member, or without has_custom_skills;
 *   USAGE_LIMIT_EXCEEDED (402, usage_type custom_skills) at the plan's max_custom_skills; CONFLICT (409) when the slug
 *   is official or another workspace's; VALIDATION_ERROR (422) when DynamoDB refuses the item's size.
 */
export async function createCustom(userId: string, input: CreateCustomInput): Promise<SkillDetail> {
  await mayAuthor(userId, input.workspace_id);
  return author(userId, input.workspace_id, {
    slug: input.slug,
    name: input.name,
    description: input.description,
    category: input.category ?? null,
    icon: input.icon ?? null,
    trigger_keywords: input.trigger_keywords,
    version: "1.0.0",
    instructions_md: input.instructions_md,
    sample_output_md: input.sample_output_md,
    output_template_md: input.output_template_md,
    license: null,
    compatibility: null,
    allowed_tools: null,
    extra_metadata: {},
  });
}

/**
 * The custom skill a workspace authored, for its author's edits and deletion.
 * @throws AppError FORBIDDEN (403) when the slug is official or another workspace authored it; NOT_FOUND (404).
 */
async function authored(userId: string, slug: string, workspaceId: string): Promise<CustomItem> {
  await requireMember(userId, workspaceId);
  const item = await customItem(workspaceId, slug);
  if (item) return item;
  if (officialSkill(slug)) {
    throw new AppError("FORBIDDEN", `${slug} is an official skill: it changes only with a release of this service. Export it and import a copy under another slug to make it your own`);
  }
  if ((await claimOf(slug)).live) throw new AppError("FORBIDDEN", `Only the workspace that authored ${slug} may change or delete it`);
  throw new AppError("NOT_FOUND", `Custom skill ${slug} not found`);
}

/** Which part of `MAJOR.MINOR.PATCH` an edit moves. */
export type Bump = "major" | "minor" | "patch";

/**
 * The next version after an edit (semantic versioning of a skill as an interface): a changed output template changes
 * the shape of the answers it produces (major); changed instructions or sample output change its behaviour (minor);
 * the name, description, category, icon or trigger keywords only how it is found and shown (patch).
 */
export function bumpVersion(version: string, bump: Bump): string {
  const [major = 1, minor = 0, patch = 0] = version.split(/[.+-]/).slice(0, 3).map((n) => Number.parseInt(n, 10) || 0);
  if (bump === "major") return `${major + 1}.0.0`;
  if (bump === "minor") return `${major}.${minor + 1}.0`;
  return `${major}.${minor}.${patch + 1}`;
}

/** The bump an edit calls for, or null when it changes nothing. */
export function bumpOf(before: CustomItem | SkillRecord, changes: Partial<Record<keyof UpdateCustomInput, unknown>>): Bump | null {
  const differs = (key: keyof UpdateCustomInput, stored: unknown) => key in changes && JSON.stringify(changes[key] ?? null) !== JSON.stringify(stored ?? null);
  if (differs("output_template_md", before.output_template_md ?? "")) return "major";
  if (differs("instructions_md", before.instructions_md) || differs("sample_output_md", before.sample_output_md ?? "")) return "minor";
  const meta = (["name", "description", "category", "icon", "trigger_keywords"] as const).some((k) => differs(k, (before as Record<string, unknown>)[k]));
  return meta ? "patch" : null;
}

/**
 * Edit a custom skill (spec 01 `PUT /api/skills/custom/{slug}`), author workspace only; the given fields replace the
 * stored ones (category and icon may be cleared with null) and the version is bumped ({@link bumpVersion}). An edit
 * that changes nothing leaves the version as it is. The write is conditioned on the version it was computed from.
 * @throws AppError FORBIDDEN (403); NOT_FOUND (404); CONFLICT (409) when other edits keep winning the race.
 */
export async function updateCustom(userId: string, slug: string, input: UpdateCustomInput): Promise<SkillDetail> {
  const ws = input.workspace_id;
  const { workspace_id: _ws, ...changes } = input;
  for (let attempt = 0; attempt < 3; attempt++) {
    const item = await authored(userId, slug, ws);
    const bump = bumpOf(item, changes);
    if (!bump) return detailOf(fromCustom(item), await usageOf(fromCustom(item)), !!(await installItem(ws, slug)));
    const set: Record<string, unknown> = { version: bumpVersion(item.version, bump), updated_at: new Date().toISOString() };
    const remove: ("category" | "icon")[] = [];
    for (const [key, value] of Object.entries(changes)) {
      if (value === null) remove.push(key as "category" | "icon");
      else if (value !== undefined) set[key] = value;
    }
    let written: CustomItem;
    try {
      let update = db().entities.customSkill.patch({ workspace_id: ws, slug }).set(set);
      if (remove.length) update = update.remove(remove);
      // The item as this write left it: a re-read could find it deleted since (a DELETE right after the edit).
      written = (await update.where((a, op) => op.eq(a.version, item.version)).go({ response: "all_new" })).data as CustomItem;
    } catch (err) {
      if (isConditionalFailure(err)) continue;
      throw isSizeRefusal(err) ? skillTooLarge(slug) : err;
    }
    const fresh = fromCustom(written);
    return detailOf(fresh, await usageOf(fresh), !!(await installItem(ws, slug)));
  }
  throw new AppError("CONFLICT", `Skill ${slug} is being edited by someone else; read it again and retry`);
}

/**
 * Delete a custom skill (spec 01 `DELETE /api/skills/custom/{slug}`), author workspace only: the skill, its
 * installation and slug claim, and one off the workspace's counter go in one transaction; its feedback before and
 * after it. A transaction cancelled by a conflict or throttle is sent again (up to COUNTED_TRIES); the counter is
 * left out only when its own condition says it is already at 0.
 * @throws AppError FORBIDDEN (403); NOT_FOUND (404); CONFLICT (409, retryable) when concurrent writes keep cancelling it.
 */
export async function deleteCustom(userId: string, slug: string, workspaceId: string): Promise<{ status: "deleted"; slug: string }> {
  await authored(userId, slug, workspaceId);
  // Feedback on a deleted skill would attach to a later skill of the same slug: it goes first, while a failed or
  // interrupted delete can still be retried (after the transaction a retry is 404, and nothing else would purge it),
  // and once more after it, for a rating that landed in between.
  const purgeFeedback = async () => deleteKeys(await partitionKeys(partitionOf(workspaceId), `skillfb#${slug}#`));
  await purgeFeedback();
  const tx = (withCounter: boolean) =>
    createWriteTransaction(db().pick("customSkill", "skillInstall", "skillSlug", "skillCounter"), ({ customSkill, skillInstall, skillSlug, skillCounter }) => [
      customSkill.delete({ workspace_id: workspaceId, slug }).where((a, op) => op.exists(a.id)).commit(),
      skillInstall.delete({ workspace_id: workspaceId, slug }).commit(),
      skillSlug.delete({ slug }).where((a, op) => op.eq(a.workspace_id, workspaceId)).commit(),
      ...(withCounter ? [skillCounter.update({ workspace_id: workspaceId }).subtract({ custom_skills: 1 }).where((a, op) => op.gt(a.custom_skills, 0)).commit()] : []),
    ]).go();
  let withCounter = true;
  for (let attempt = 1; ; attempt++) {
    const codes = cancelCodes(await tx(withCounter));
    if (codes.length === 0) break;
    if (codes[0] === "ConditionalCheckFailed") throw new AppError("NOT_FOUND", `Custom skill ${slug} not found`);
    if (withCounter && codes[3] === "ConditionalCheckFailed" && codes.slice(0, 3).every((c) => c === "None")) {
      // Only the counter's own condition refused: it was already at 0 (it never goes below). Delete without it, and
      // say so in the log. A conflict or throttle on the counter is no such proof: it would leave the count one high.
      log().warn("custom skills counter was 0 while deleting a custom skill", { workspace_id: workspaceId, slug });
      withCounter = false;
      continue;
    }
    // A refused slug claim cannot change by retrying; a conflict or throttle (another delete or create moving the
    // counter at the same moment) wrote nothing, and the counted delete is tried again.
    if (codes.includes("ConditionalCheckFailed")) throw new AppError("CONFLICT", `Skill ${slug} could not be deleted; try again`);
    if (attempt >= COUNTED_TRIES) throw new AppError("CONFLICT", `Skill ${slug} could not be deleted while the workspace's skills changed; try again`, { retryable: true });
    await conflictPause(attempt);
  }
  forgetUsage(slug);
  await purgeFeedback();
  return { status: "deleted", slug };
}

// ---------------------------------------------------------------------------------------------------------------
// Feedback.

/**
 * Rate a skill (spec 01 `POST /api/skills/{slug}/feedback`): one rating per user, workspace and skill; a second one
 * replaces the first, keeps its id, and `created_at` becomes the time of the new rating.
 * A rating of a custom skill is written only while that skill exists, so it cannot outlive its deletion.
 * @throws AppError NOT_FOUND (404) when the slug names no skill visible to the workspace, or the custom skill was
 *   deleted or replaced meanwhile; FORBIDDEN (403); CONFLICT (409, retryable) when the write met another on the skill.
 */
export async function rate(userId: string, slug: string, input: FeedbackInput): Promise<SkillFeedback> {
  const ws = input.workspace_id;
  await requireMember(userId, ws);
  const record = await resolve(slug, ws);
  if (!record) throw notFound(slug);
  const { data: before } = await db().entities.skillFeedback.get({ workspace_id: ws, slug, user_id: userId }).go({ consistent: true });
  const item = {
    workspace_id: ws,
    slug,
    user_id: userId,
    id: before?.id ?? randomUUID(),
    rating: input.rating,
    ...(input.feedback_text ? { feedback_text: input.feedback_text } : {}),
    created_at: new Date().toISOString(),
  };
  if (record.is_official) {
    await db().entities.skillFeedback.put(item).go();
  } else {
    // Only while the skill rated is there: deleteCustom clears the feedback after deleting the skill, so a rating
    // written after that would outlive it and go to a later skill of the same slug (the id tells that one apart).
    const result = await createWriteTransaction(db().pick("customSkill", "skillFeedback"), ({ customSkill, skillFeedback }) => [
      customSkill.check({ workspace_id: ws, slug }).where((a, op) => op.eq(a.id, record.id)).commit(),
      skillFeedback.put(item).commit(),
    ]).go();
    if (result.canceled) {
      if (cancelCodes(result)[0] === "ConditionalCheckFailed") throw notFound(slug);
      throw new AppError("CONFLICT", `The feedback on ${slug} could not be stored while the skill changed; try again`, { retryable: true });
    }
  }
  return { id: item.id, skill_slug: slug, rating: item.rating, feedback_text: input.feedback_text || null, created_at: item.created_at };
}

// ---------------------------------------------------------------------------------------------------------------
// Portable skills.

/**
 * Export a skill as a zip of its Agent Skills folder (our endpoint `GET /api/skills/{slug}/export`): any official
 * skill, or the named workspace's custom skill.
 * @returns the archive and its file name (`<slug>-<version>.zip`)
 * @throws AppError NOT_FOUND (404); FORBIDDEN (403) when a workspace is named and the caller is not a member.
 */
export async function exportSkill(userId: string, slug: string, workspaceId?: string): Promise<{ filename: string; bytes: Buffer }> {
  if (workspaceId) await requireMember(userId, workspaceId);
  const record = await resolve(slug, workspaceId);
  if (!record) throw notFound(slug);
  // Official skills change only with a release: one fixed date keeps their archives byte for byte the same.
  const modified = new Date(record.updated_at ?? "2024-01-01T00:00:00Z");
  // Loaded here, not at import: the copilot's stream Lambda imports this module (the run hook) and zips nothing.
  const { writeArchive } = await import("./portable");
  return { filename: `${record.slug}-${record.version}.zip`, bytes: await writeArchive(record, modified) };
}

/**
 * Import an Agent Skills folder as a custom skill of the workspace (our endpoint `POST /api/skills/import`): a zip of
 * the folder or a lone SKILL.md, validated by the format's rules (format.ts), then by the custom skill limits, then
 * authored as `createCustom` does (same plan gates, same counter, same slug rules). The version, license,
 * compatibility, allowed-tools and other metadata keys are kept, so the skill exports as it came.
 * @returns the skill, and the folder's files this service does not use (scripts, references, other assets)
 * @throws AppError VALIDATION_ERROR (422) naming each problem (unknown front-matter fields by name); and the errors of
 *   `createCustom`.
 */
export async function importSkill(userId: string, body: ImportBody): Promise<ImportResult> {
  const ws = body.workspace_id;
  await mayAuthor(userId, ws);
  if (body.file.truncated) throw Errors.validation([{ loc: ["body", "file"], msg: "the file is larger than an import takes", type: "too_large" }]);
  // The archive reader and the Agent Skills parser (YAML) load with the first import, not on the chat path.
  const [{ readUpload }, { readSkillFolder }] = await Promise.all([import("./portable"), import("./format")]);
  const upload = await readUpload(body.file.content, body.file.filename);
  const { content, unused } = readSkillFolder(upload.files, ["body", "file"], upload.folder);
  const slug = body.slug ?? content.slug;
  // The custom skill's own limits, checked with the create schema so an import is held to what a create is.
  const checked = CreateCustomInput.safeParse({
    workspace_id: ws,
    slug,
    name: content.name,
    description: content.description,
    instructions_md: content.instructions_md,
    ...(content.category ? { category: content.category } : {}),
    ...(content.icon ? { icon: content.icon } : {}),
    trigger_keywords: content.trigger_keywords,
    sample_output_md: content.sample_output_md,
    output_template_md: content.output_template_md,
  });
  if (!checked.success) {
    const errors: FieldError[] = checked.error.issues.map((i) => ({ loc: ["body", "file", ...i.path.map((p) => (typeof p === "symbol" ? String(p) : p))], msg: i.message, type: i.code }));
    throw Errors.validation(errors, `The skill does not fit a custom skill: ${errors.map((e) => `${e.loc.slice(2).join(".")}: ${e.msg}`).join("; ")}`);
  }
  const v = checked.data;
  const skill = await author(userId, ws, {
    ...content,
    slug: v.slug,
    name: v.name,
    description: v.description,
    instructions_md: v.instructions_md,
    category: v.category ?? null,
    icon: v.icon ?? null,
    trigger_keywords: v.trigger_keywords,
    sample_output_md: v.sample_output_md,
    output_template_md: v.output_template_md,
  });
  return { skill, ignored_files: [...unused, ...upload.others].sort() };
}

// ---------------------------------------------------------------------------------------------------------------
// For the copilot's run hook (hook.ts).

/** An enabled installed skill, ready to match and load. */
export interface ActiveSkill {
  record: SkillRecord;
  install: { id: string; slug: string; activation_count: number };
}

/** The workspace's enabled installed skills (two Queries of its partition). */
export async function activeSkills(workspaceId: string): Promise<ActiveSkill[]> {
  return (await installedRecords(workspaceId))
    .filter(({ item }) => item.is_enabled)
    .map(({ item, record }) => ({ record, install: { id: item.id, slug: item.slug, activation_count: item.activation_count ?? 0 } }));
}

/** Record that a run loaded an installed skill: `last_used_at` now, `activation_count` + 1. */
export async function recordActivation(workspaceId: string, slug: string): Promise<void> {
  try {
    await db().entities.skillInstall.patch({ workspace_id: workspaceId, slug }).set({ last_used_at: new Date().toISOString() }).add({ activation_count: 1 }).go();
  } catch (err) {
    // Uninstalled between the read and this write: there is nothing to record.
    if (!isConditionalFailure(err)) throw err;
  }
}

/**
 * Record that an official skill was suggested to a user in a workspace, once: a create-if-absent, so of two runs at
 * the same time only one suggests it.
 * @returns true when this call recorded it (suggest now), false when it was suggested before
 */
export async function claimSuggestion(workspaceId: string, userId: string, slug: string, conversationId: string): Promise<boolean> {
  try {
    await db().entities.skillSuggestion.create({ workspace_id: workspaceId, user_id: userId, slug, conversation_id: conversationId }).go();
    return true;
  } catch (err) {
    if (isConditionalFailure(err)) return false;
    throw err;
  }
}

/** Whether the workspace's plan lets it install skills (has_skills): a suggestion it could not act on is noise. */
export async function canInstallSkills(workspaceId: string): Promise<boolean> {
  return (await limitsOfWorkspace(workspaceId)).limits.has_skills;
}

export { officialSkills, officialSkill } from "./library";
