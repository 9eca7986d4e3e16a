import * as z from "zod";
import { Errors, type FieldError } from "../error";

/**
 * The most blocks a document holds: a reorder names every block (`block_ids`, at most this many), and an extraction
 * writes them all in one request. A create past it, or an extraction that would produce more, answers 422
 * (core/document/block-ops.ts).
 */
export const MAX_BLOCKS_PER_DOCUMENT = 500;

/**
 * Document blocks: the typed content contract (spec 01 "Document block": `content` is a JSON object whose structure
 * varies by `block_type`).
 *
 * ## Block content contract
 *
 * Every content object is a strict object (unknown keys are a 422, never silently dropped), so what a product manager
 * edits is what tickets and AI actions read. Text fields may be empty strings — an editor creates empty blocks and the
 * challenge action flags what is missing — while lists default to `[]`. Fields:
 *
 * | block_type | content |
 * |---|---|
 * | problem | `statement`, `impact`, `evidence: {insight_id?, quote?, source_id?, note?}[]`, `affected_users?` |
 * | persona | `name`, `description`, `goals[]`, `pain_points[]`, `quote?` |
 * | solution | `summary`, `details[]`, `alternatives_considered[]`, `non_goals[]` |
 * | metrics | `metrics: {name, target, baseline?, measurement?, kind?: primary/secondary/guardrail}[]` |
 * | user_story | `as_a`, `i_want`, `so_that`, `acceptance_criteria[]`, `priority?: must/should/could/wont` (MoSCoW) |
 * | edge_case | `scenario`, `expected_behavior` |
 * | risk | `risk`, `likelihood?: low/medium/high`, `impact?: low/medium/high`, `mitigation`, `owner?` |
 * | timeline | `milestones: {name, target_date? (YYYY-MM-DD), week? (≥ 0), deliverables[]}[]` |
 * | free_text | `markdown` |
 *
 * Absent `likelihood`/`impact` on a risk means "not assessed" (not "medium"); absent `baseline` on a metric means
 * "not measured yet". Evidence items need at least one of `insight_id`, `quote` or `note`.
 *
 * ## Content and blocks stay consistent by one rule
 *
 * The document's Markdown `content` is the source of truth: it is what revisions snapshot, what diffs compare and what
 * restore brings back. Blocks are a structured view of it, (re)built by `extractBlocks(content)`
 * (`POST /api/blocks/extract`, core/document/markdown.ts). Editing a block changes the block only; the content is
 * rewritten from blocks only when a caller explicitly applies {@link blocksToMarkdown} (and that write goes through the
 * normal content save, so it creates a revision like any other edit). The two directions are built to round-trip:
 * `extractBlocks(blocksToMarkdown(blocks))` reproduces the blocks' types, titles and content (tested), because the
 * renderer writes the same Markdown structure the extractor reads, and adds an invisible `<!-- block:<type> -->`
 * marker only when a block's title alone would not classify as its type.
 */

/**
 * Bounds of one block's content as JSON (docs/decisions.md "Free-form JSON objects"). The per-field limits below
 * allow far more in sum (a solution's three lists alone: 300 items of 2,000 characters, up to 1.8 MB of UTF-8), so
 * the whole object is capped as well: 256 KiB of JSON keeps a block item well inside DynamoDB's 400 KB.
 */
export const BLOCK_CONTENT_BOUNDS = { maxBytes: 256 * 1024, maxDepth: 8, maxKeys: 100, maxKeyLength: 200 } as const;

const text = z.string().max(20_000);
const shortText = z.string().max(2_000);
const list = (max = 100) => z.array(shortText).max(max).default([]);
const level = z.enum(["low", "medium", "high"]);

export const BlockType = z
  .enum(["problem", "persona", "solution", "metrics", "user_story", "edge_case", "risk", "timeline", "free_text"])
  .meta({ id: "BlockType" });
export type BlockType = z.infer<typeof BlockType>;
export const BLOCK_TYPES = BlockType.options;

export const EvidenceItem = z
  .strictObject({
    insight_id: z.string().min(1).optional(),
    quote: shortText.optional(),
    source_id: z.string().min(1).optional(),
    note: shortText.optional(),
  })
  .refine((e) => !!(e.insight_id || e.quote || e.note), "evidence needs an insight_id, a quote or a note");
export type EvidenceItem = z.infer<typeof EvidenceItem>;

/** What is wrong, for whom, and what it costs — with the research behind it. */
export const ProblemContent = z
  .strictObject({
    statement: text,
    evidence: z.array(EvidenceItem).max(100).default([]),
    impact: text.default(""),
    affected_users: shortText.optional(),
  })
  .meta({ id: "ProblemBlockContent" });

/** Who we build for. */
export const PersonaContent = z
  .strictObject({
    name: shortText,
    description: text.default(""),
    goals: list(),
    pain_points: list(),
    quote: shortText.optional(),
  })
  .meta({ id: "PersonaBlockContent" });

/** What we will build, what we will not, and what else we weighed. */
export const SolutionContent = z
  .strictObject({
    summary: text,
    details: list(),
    alternatives_considered: list(),
    non_goals: list(),
  })
  .meta({ id: "SolutionBlockContent" });

export const Metric = z.strictObject({
  name: shortText,
  target: shortText,
  baseline: shortText.optional(),
  measurement: shortText.optional(),
  kind: z.enum(["primary", "secondary", "guardrail"]).optional(),
});
export type Metric = z.infer<typeof Metric>;

/** How we will know it worked. */
export const MetricsContent = z.strictObject({ metrics: z.array(Metric).max(50).default([]) }).meta({ id: "MetricsBlockContent" });

/** "As a …, I want …, so that …" with testable acceptance criteria. */
export const UserStoryContent = z
  .strictObject({
    as_a: shortText,
    i_want: shortText,
    so_that: shortText.default(""),
    acceptance_criteria: list(),
    priority: z.enum(["must", "should", "could", "wont"]).optional(),
  })
  .meta({ id: "UserStoryBlockContent" });

/** An unusual situation and what the product must do then. */
export const EdgeCaseContent = z
  .strictObject({ scenario: text, expected_behavior: text.default("") })
  .meta({ id: "EdgeCaseBlockContent" });

/** A risk with its assessment and mitigation. */
export const RiskContent = z
  .strictObject({
    risk: text,
    likelihood: level.optional(),
    impact: level.optional(),
    mitigation: text.default(""),
    owner: shortText.optional(),
  })
  .meta({ id: "RiskBlockContent" });

export const Milestone = z.strictObject({
  name: shortText,
  target_date: z.iso.date().optional(),
  week: z.number().min(0).max(520).optional(),
  deliverables: list(),
});
export type Milestone = z.infer<typeof Milestone>;

/** Milestones in order, each dated or placed in a week, with deliverables. */
export const TimelineContent = z
  .strictObject({ milestones: z.array(Milestone).max(50).default([]) })
  .meta({ id: "TimelineBlockContent" });

/** Anything else, as Markdown. */
export const FreeTextContent = z.strictObject({ markdown: z.string().max(100_000) }).meta({ id: "FreeTextBlockContent" });

/** The content schema of each block type. */
export const BLOCK_CONTENT_SCHEMAS = {
  problem: ProblemContent,
  persona: PersonaContent,
  solution: SolutionContent,
  metrics: MetricsContent,
  user_story: UserStoryContent,
  edge_case: EdgeCaseContent,
  risk: RiskContent,
  timeline: TimelineContent,
  free_text: FreeTextContent,
} as const satisfies Record<BlockType, z.ZodType>;

export type BlockContentMap = { [K in BlockType]: z.infer<(typeof BLOCK_CONTENT_SCHEMAS)[K]> };
export type BlockContent<K extends BlockType = BlockType> = BlockContentMap[K];

const member = <K extends BlockType>(k: K) =>
  z.object({ block_type: z.literal(k), content: BLOCK_CONTENT_SCHEMAS[k] as (typeof BLOCK_CONTENT_SCHEMAS)[K] });

/** A typed block's `block_type` + `content`, discriminated on `block_type`. */
export const BlockInput = z
  .discriminatedUnion("block_type", [
    member("problem"),
    member("persona"),
    member("solution"),
    member("metrics"),
    member("user_story"),
    member("edge_case"),
    member("risk"),
    member("timeline"),
    member("free_text"),
  ])
  .meta({ id: "BlockInput" });
export type BlockInput = z.infer<typeof BlockInput>;

const draftExtra = { title: z.string().max(500), position: z.int().min(0) };

/** A block before it is stored: type, title, content and position (what extraction and intent parsing return). */
export const BlockDraft = z
  .discriminatedUnion("block_type", [
    member("problem").extend(draftExtra),
    member("persona").extend(draftExtra),
    member("solution").extend(draftExtra),
    member("metrics").extend(draftExtra),
    member("user_story").extend(draftExtra),
    member("edge_case").extend(draftExtra),
    member("risk").extend(draftExtra),
    member("timeline").extend(draftExtra),
    member("free_text").extend(draftExtra),
  ])
  .meta({ id: "BlockDraft" });
export type BlockDraft = z.infer<typeof BlockDraft>;

/** Any block-like value the renderers and actions accept (a stored block has more fields; they are ignored). */
export type BlockLike = { block_type: BlockType; title?: string | null; content: unknown; position?: number };

/** A valid, empty content object for a type (for `POST /blocks` without content). */
export function emptyBlockContent<K extends BlockType>(type: K): BlockContent<K> {
  const seeds: Record<BlockType, unknown> = {
    problem: { statement: "" },
    persona: { name: "" },
    solution: { summary: "" },
    metrics: {},
    user_story: { as_a: "", i_want: "" },
    edge_case: { scenario: "" },
    risk: { risk: "" },
    timeline: {},
    free_text: { markdown: "" },
  };
  return BLOCK_CONTENT_SCHEMAS[type].parse(seeds[type]) as BlockContent<K>;
}

/**
 * Validates `content` against the contract of `type` and returns it with defaults applied (empty lists filled in).
 *
 * @throws AppError `VALIDATION_ERROR` (422) with `errors: [{loc: ["content", ...path], msg, type}]`, or with
 *   `loc: ["block_type"]` for an unknown type.
 */
export function validateBlockContent<K extends BlockType>(type: K, content: unknown): BlockContent<K> {
  const schema = (BLOCK_CONTENT_SCHEMAS as Record<string, z.ZodType>)[type];
  if (!schema) {
    throw Errors.validation([{ loc: ["block_type"], msg: `Unknown block_type '${type}'`, type: "enum" }], `Unknown block_type '${type}'`);
  }
  const r = schema.safeParse(content);
  if (!r.success) {
    const errors: FieldError[] = r.error.issues.map((i) => ({
      loc: ["content", ...i.path.map((p) => (typeof p === "number" ? p : String(p)))],
      msg: i.message,
      type: i.code,
    }));
    throw Errors.validation(errors, `Invalid content for block_type '${type}'`);
  }
  return r.data as BlockContent<K>;
}

// ---------------------------------------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------------------------------------

/**
 * Shifts ATX headings (outside fenced code) so the shallowest is at least `minDepth` (max 6), so a free-text block's
 * own headings stay inside its section.
 */
function demoteHeadings(markdown: string, minDepth: number): string {
  const lines = markdown.split("\n");
  let fence: string | undefined;
  const depths: number[] = [];
  const isHeading: (number | undefined)[] = lines.map((l) => {
    const f = /^\s{0,3}(`{3,}|~{3,})/.exec(l);
    if (f) {
      if (!fence) fence = f[1][0];
      else if (f[1][0] === fence) fence = undefined;
      return undefined;
    }
    if (fence) return undefined;
    const h = /^\s{0,3}(#{1,6})(\s|$)/.exec(l);
    if (h) depths.push(h[1].length);
    return h ? h[1].length : undefined;
  });
  if (!depths.length) return markdown;
  const shift = Math.max(0, minDepth - Math.min(...depths));
  if (!shift) return markdown;
  return lines
    .map((l, i) => (isHeading[i] ? l.replace(/^(\s{0,3})(#{1,6})/, (_, sp: string, h: string) => sp + "#".repeat(Math.min(6, h.length + shift))) : l))
    .join("\n");
}

/** Block types that usually come several to a section; the renderer groups consecutive ones under one heading. */
export const GROUPED_TYPES: Partial<Record<BlockType, string>> = {
  persona: "Personas",
  user_story: "User stories",
  edge_case: "Edge cases",
  risk: "Risks",
};

/** Default section title of each type (used when a block has no title). */
export const DEFAULT_TITLES: Record<BlockType, string> = {
  problem: "Problem",
  persona: "Persona",
  solution: "Solution",
  metrics: "Success metrics",
  user_story: "User story",
  edge_case: "Edge case",
  risk: "Risk",
  timeline: "Timeline",
  free_text: "Notes",
};

/** Markdown link target used for insight references: `#insight-<id>` (extraction reads it back as `insight_id`). */
export const insightHref = (insightId: string): string => `#insight-${insightId}`;
/** Reads an insight id back from an {@link insightHref} link target. */
export function insightIdFromHref(href: string): string | undefined {
  return /^#insight-([A-Za-z0-9_-]+)$/.exec(href.trim())?.[1];
}

const esc = (s: string) => s.replace(/\|/g, "\\|").replace(/\n+/g, " ");
const bullet = (items: string[], prefix = "- ") => items.map((i) => `${prefix}${i.replace(/\n+/g, " ")}`).join("\n");
const labelled = (label: string, items: string[]) => (items.length ? `**${label}:**\n\n${bullet(items)}` : "");
const parts = (...p: (string | false | undefined)[]) => p.filter((x): x is string => !!x && x.trim() !== "").join("\n\n");

/**
 * The body (everything under the heading) of one block as Markdown, in the structure `extractBlocks` reads back.
 * Content is parsed with the type's schema first (so partial content renders with defaults).
 *
 * @throws AppError `VALIDATION_ERROR` when `content` does not satisfy the type's contract.
 */
export function blockBodyToMarkdown(block: BlockLike, depth = 2): string {
  const t = block.block_type;
  switch (t) {
    case "problem": {
      const c = validateBlockContent(t, block.content);
      const ev = c.evidence.map((e) => {
        const q = e.quote ? `“${e.quote}”` : "";
        const n = e.note ? (e.quote ? `— ${e.note}` : e.note) : "";
        const ref = e.insight_id ? `([insight](${insightHref(e.insight_id)}))` : "";
        return [q, n, ref].filter(Boolean).join(" ");
      });
      return parts(
        c.statement,
        c.affected_users && `**Affected users:** ${c.affected_users}`,
        c.impact && `**Impact:** ${c.impact}`,
        labelled("Evidence", ev),
      );
    }
    case "persona": {
      const c = validateBlockContent(t, block.content);
      return parts(
        `**Name:** ${c.name}`,
        c.description,
        c.quote && `> “${c.quote}”`,
        labelled("Goals", c.goals),
        labelled("Pain points", c.pain_points),
      );
    }
    case "solution": {
      const c = validateBlockContent(t, block.content);
      return parts(
        c.summary,
        labelled("Details", c.details),
        labelled("Alternatives considered", c.alternatives_considered),
        labelled("Non-goals", c.non_goals),
      );
    }
    case "metrics": {
      const c = validateBlockContent(t, block.content);
      if (!c.metrics.length) return "";
      const rows = c.metrics.map(
        (m) =>
          `| ${esc(m.name)} | ${esc(m.kind ?? "")} | ${esc(m.baseline ?? "")} | ${esc(m.target)} | ${esc(m.measurement ?? "")} |`,
      );
      return ["| Metric | Kind | Baseline | Target | Measurement |", "|---|---|---|---|---|", ...rows].join("\n");
    }
    case "user_story": {
      const c = validateBlockContent(t, block.content);
      const article = /^[aeiou]/i.test(c.as_a) ? "an" : "a";
      const story = `As ${article} ${c.as_a}, I want ${c.i_want}${c.so_that ? `, so that ${c.so_that}` : ""}.`;
      return parts(
        story,
        c.priority && `**Priority:** ${c.priority}`,
        labelled("Acceptance criteria", c.acceptance_criteria.map((a) => `[ ] ${a}`)),
      );
    }
    case "edge_case": {
      const c = validateBlockContent(t, block.content);
      return parts(`**Scenario:** ${c.scenario}`, `**Expected behavior:** ${c.expected_behavior}`);
    }
    case "risk": {
      const c = validateBlockContent(t, block.content);
      const fields = [
        c.likelihood && `**Likelihood:** ${c.likelihood}`,
        c.impact && `**Impact:** ${c.impact}`,
        `**Mitigation:** ${c.mitigation}`,
        c.owner && `**Owner:** ${c.owner}`,
      ].filter((x): x is string => !!x);
      return parts(c.risk, bullet(fields));
    }
    case "timeline": {
      const c = validateBlockContent(t, block.content);
      return c.milestones
        .map((m) => {
          const when = [m.week !== undefined ? `week ${m.week}` : "", m.target_date ?? ""].filter(Boolean).join(", ");
          const head = `- **${m.name}**${when ? ` (${when})` : ""}`;
          return m.deliverables.length ? `${head}\n${bullet(m.deliverables, "  - ")}` : head;
        })
        .join("\n");
    }
    case "free_text": {
      const c = validateBlockContent(t, block.content);
      return demoteHeadings(c.markdown.trim(), depth + 1);
    }
  }
}

/**
 * Heading → block type, by keyword heuristics on the heading text (case-insensitive, first rule wins):
 * user stories / jobs to be done → user_story; edge/corner cases, error states, failure modes → edge_case;
 * risks, concerns, mitigations → risk; metrics, success, KPIs, measures → metrics; timeline, milestones, rollout, phases,
 * schedule, plan, roadmap → timeline; personas, users, audience, customers, "who it is for" → persona;
 * problem, background, context, pain points, motivation, why, evidence, research findings → problem;
 * solution, proposal, approach, requirements, scope, "what we will build", overview of the change → solution;
 * anything else → free_text. A leading "Problem:", "Risk:"-style prefix counts the same way.
 */
export function classifyHeading(heading: string): BlockType {
  const h = heading.toLowerCase().replace(/[*_`#]/g, " ").replace(/\s+/g, " ").trim();
  const rules: [RegExp, BlockType][] = [
    [/^(open |unanswered )?questions\b|\bfaq\b|\bsources\b|\breferences\b|\bappendix\b|\binstructions\b/, "free_text"],
    [/\buser stor(y|ies)\b|\bstories\b|\bjobs[- ]to[- ]be[- ]done\b|\bjtbd\b/, "user_story"],
    [/\b(edge|corner|boundary) cases?\b|\berror (states?|cases?|handling)\b|\bfailure (modes?|cases?)\b|\bwhat if\b/, "edge_case"],
    [/\brisks?\b|\bconcerns?\b|\bmitigations?\b|\bthreats?\b/, "risk"],
    [/\bmetrics?\b|\bsuccess\b|\bkpis?\b|\bmeasur(e|es|ement|ing)\b|\bokrs?\b/, "metrics"],
    [/\btimeline\b|\bmilestones?\b|\broll[- ]?out\b|\bphases?\b|\bschedule\b|\broadmap\b|\b(launch|release|delivery) plan\b|\bnow\s*\/\s*next\b/, "timeline"],
    [/\bpersonas?\b|^(target |primary |our |the )?(users?|customers?)( segments?)?$|\btarget (users?|audience|customers?)\b|\baudiences?\b|\bwho (is it|it'?s|this is|we'?re building) for\b|\buser (segments?|profiles?)\b/, "persona"],
    [/\bproblems?\b|\bbackground\b|\bcontext\b|\bpain points?\b|\bmotivation\b|^why\b|\bevidence\b|\bresearch findings\b|\bwhat we heard\b|\bopportunity\b/, "problem"],
    [/\bsolutions?\b|\bproposals?\b|\bproposed\b|\bapproach\b|\brequirements?\b|\bscope\b|\bnon-?goals?\b|\balternatives\b|\bwhat we('ll| will) build\b|\bdesign\b|\bwhat'?s new\b/, "solution"],
  ];
  for (const [re, type] of rules) if (re.test(h)) return type;
  return "free_text";
}

/** The HTML comment that pins a section's block type: `<!-- block:risk -->`. Invisible when rendered. */
export const blockMarker = (type: BlockType): string => `<!-- block:${type} -->`;

/**
 * One block as a Markdown section: `## <title>` then the body. Used on its own (e.g. to preview or copy a block);
 * documents use {@link blocksToMarkdown}, which also groups several personas / stories / edge cases / risks.
 *
 * @param depth heading level, 2 by default.
 */
export function blockToMarkdown(block: BlockLike, depth = 2): string {
  const title = block.title?.trim() || DEFAULT_TITLES[block.block_type];
  const needsMarker = classifyHeading(title) !== block.block_type;
  const head = `${needsMarker ? `${blockMarker(block.block_type)}\n` : ""}${"#".repeat(depth)} ${title}`;
  return parts(head, blockBodyToMarkdown(block, depth));
}

/**
 * A whole document body from blocks, ordered by `position` (then input order). Consecutive blocks of a grouped type
 * (persona, user_story, edge_case, risk) go under one `## Personas` / `## User stories` / `## Edge cases` / `## Risks`
 * heading with one `###` sub-section each; every other block is its own `##` section.
 *
 * @param opts.title optional document title, written as a leading `# title`.
 * @returns Markdown ending with a newline. `extractBlocks` of it returns the same blocks (types, titles, content).
 */
export function blocksToMarkdown(blocks: BlockLike[], opts: { title?: string } = {}): string {
  const ordered = blocks
    .map((b, i) => ({ b, i }))
    .sort((x, y) => (x.b.position ?? x.i) - (y.b.position ?? y.i) || x.i - y.i)
    .map((x) => x.b);
  const out: string[] = [];
  if (opts.title?.trim()) out.push(`# ${opts.title.trim()}`);
  for (let i = 0; i < ordered.length; ) {
    const b = ordered[i];
    const group = GROUPED_TYPES[b.block_type];
    if (!group) {
      out.push(blockToMarkdown(b, 2));
      i++;
      continue;
    }
    let j = i;
    const sub: string[] = [];
    while (j < ordered.length && ordered[j].block_type === b.block_type) {
      const s = ordered[j];
      const title = s.title?.trim() || DEFAULT_TITLES[s.block_type];
      sub.push(parts(`### ${title}`, blockBodyToMarkdown(s, 3)));
      j++;
    }
    out.push(parts(`## ${group}`, ...sub));
    i = j;
  }
  return out.join("\n\n") + "\n";
}
