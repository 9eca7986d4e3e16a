/**
 * The official skill library (spec 01 Skill `is_official`; DESIGN.md 6.6): the folders under core/skill/official/,
 * compiled into official.generated.ts by scripts/skills-build.ts, which parses them with the same Agent Skills parser
 * that reads imports.
 */
import { v5 as uuidv5 } from "uuid";
import { OFFICIAL_SKILLS } from "./official.generated";
import type { SkillContent } from "./format";

/** An official skill: its content and a stable id (UUID v5 of its slug, the same in every deployment). */
export interface OfficialSkill extends SkillContent {
  id: string;
}

/** Namespace of official skill ids (UUID v5 of the slug). */
const OFFICIAL_NAMESPACE = "4f5a1d52-3c1b-5f0e-9a57-6b1f0c2d9e31";

let library: Map<string, OfficialSkill> | undefined;

/**
 * The library, from the content parsed at build time (scripts/skills-build.ts reads each folder with the parser that
 * reads imports, and stops on one that does not validate; test/unit/skill/official.test.ts checks the module is
 * current). Nothing is parsed here: the first chat of a container used to spend 30-55 ms and a YAML parser on it.
 */
function load(): Map<string, OfficialSkill> {
  const out = new Map<string, OfficialSkill>();
  for (const content of Object.values(OFFICIAL_SKILLS)) out.set(content.slug, { ...content, id: uuidv5(content.slug, OFFICIAL_NAMESPACE) });
  return out;
}

/** Every official skill, by slug order. */
export function officialSkills(): OfficialSkill[] {
  library ??= load();
  return [...library.values()].sort((a, b) => a.slug.localeCompare(b.slug));
}

/** The official skill with this slug, or undefined. */
export function officialSkill(slug: string): OfficialSkill | undefined {
  library ??= load();
  return library.get(slug);
}
