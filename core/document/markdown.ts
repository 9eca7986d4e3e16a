import { Lexer, type MarkedToken, type Token, type Tokens } from "marked";
import { jsonBytes } from "../json-object";
import {
  BLOCK_CONTENT_BOUNDS,
  BLOCK_TYPES,
  BlockDraft,
  type BlockType,
  type EvidenceItem,
  type Metric,
  type Milestone,
  classifyHeading,
  insightIdFromHref,
} from "./blocks";
import { keywords, sentences, stem, stripEndPunct, truncate, upperFirst } from "../recommendation/engine/text";

/**
 * Markdown → blocks (spec 01 `POST /api/blocks/extract` and `POST /api/intent/parse`).
 *
 * Consistency rule (also in core/document/blocks.ts): a document's Markdown `content` is the source of truth for
 * revisions, diffs and restores; blocks are (re)extracted from it on request with {@link extractBlocks}. Editing blocks
 * does not rewrite the content unless the caller applies `blocksToMarkdown` and saves the result as content.
 * `extractBlocks(blocksToMarkdown(blocks))` gives back the same blocks.
 *
 * Parsing uses the `marked` lexer (CommonMark + GFM tables and task lists); the mapping of sections to block types is
 * heuristic (headings and keywords, {@link classifyHeading}), and every section that does not map cleanly is kept as a
 * `free_text` block, so no text of the document is dropped silently.
 */

type Draft = BlockDraft;
type Unpositioned = { [K in BlockType]: { block_type: K; title: string; content: Extract<BlockDraft, { block_type: K }>["content"] } }[BlockType];

// ---------------------------------------------------------------------------------------------------------------
// Inline text helpers
// ---------------------------------------------------------------------------------------------------------------

/**
 * Plain text of inline tokens: emphasis and code markers dropped, links reduced to their text. Links to insights
 * (`#insight-<id>`) are written as `[text]` (so "[I1]" references stay visible), or skipped with `skipInsightLinks`.
 */
function plain(tokens: Token[] | undefined, opts: { skipInsightLinks?: boolean } = {}): string {
  if (!tokens) return "";
  let out = "";
  for (const t of tokens) {
    switch (t.type) {
      case "text":
      case "escape":
        out += "tokens" in t && Array.isArray(t.tokens) && t.tokens.length ? plain(t.tokens, opts) : t.text;
        break;
      case "strong":
      case "em":
      case "del":
        out += plain(t.tokens, opts);
        break;
      case "codespan":
        out += t.text;
        break;
      case "br":
        out += "\n";
        break;
      case "link": {
        const isInsight = insightIdFromHref(t.href) !== undefined;
        if (isInsight && opts.skipInsightLinks) break;
        out += isInsight ? `[${plain(t.tokens, opts)}]` : plain(t.tokens, opts);
        break;
      }
      case "image":
        out += t.text;
        break;
      case "checkbox":
      case "html":
        break;
      case "paragraph":
        out += plain(t.tokens, opts);
        break;
      default:
        out += "text" in t && typeof t.text === "string" ? t.text : "";
    }
  }
  return out.replace(/[ \t]+/g, " ").trim();
}

/** Insight ids linked anywhere in the tokens (via `#insight-<id>` hrefs, inline or reference-style). */
function insightIds(tokens: Token[] | undefined): string[] {
  const ids: string[] = [];
  const walk = (ts: Token[] | undefined) => {
    for (const t of ts ?? []) {
      if (t.type === "link") {
        const id = insightIdFromHref(t.href);
        if (id && !ids.includes(id)) ids.push(id);
      }
      if ("tokens" in t && Array.isArray(t.tokens)) walk(t.tokens as Token[]);
      if (t.type === "list") for (const it of t.items) walk(it.tokens);
    }
  };
  walk(tokens);
  return ids;
}

interface Item {
  text: string;
  tokens: Token[];
  sub: Item[];
}

function toItems(list: Tokens.List): Item[] {
  return list.items.map((it) => {
    const own = it.tokens.filter((t) => t.type !== "list");
    const subs = it.tokens.filter((t): t is Tokens.List => t.type === "list");
    return { text: plain(own), tokens: own, sub: subs.flatMap(toItems) };
  });
}

/** A unit of section body. */
type Unit =
  | { kind: "para"; text: string; tokens: Token[]; raw: string }
  | { kind: "list"; items: Item[]; raw: string }
  | { kind: "table"; header: string[]; rows: string[][]; raw: string }
  | { kind: "quote"; text: string; tokens: Token[]; raw: string }
  | { kind: "other"; raw: string };

function units(tokens: Token[]): Unit[] {
  const out: Unit[] = [];
  for (const tok of tokens) {
    const t = tok as MarkedToken;
    if (t.type === "space" || t.type === "def") continue;
    if (t.type === "paragraph") out.push({ kind: "para", text: plain(t.tokens), tokens: t.tokens, raw: t.raw });
    else if (t.type === "list") out.push({ kind: "list", items: toItems(t), raw: t.raw });
    else if (t.type === "table")
      out.push({
        kind: "table",
        header: t.header.map((c: Tokens.TableCell) => plain(c.tokens)),
        rows: t.rows.map((r: Tokens.TableCell[]) => r.map((c) => plain(c.tokens))),
        raw: t.raw,
      });
    else if (t.type === "blockquote") out.push({ kind: "quote", text: plain(t.tokens), tokens: t.tokens, raw: t.raw });
    else if (t.type === "html" && /^<!--[\s\S]*-->\s*$/.test(t.raw.trim())) continue;
    else if (t.type === "text") out.push({ kind: "para", text: plain([t]), tokens: [t], raw: t.raw });
    else out.push({ kind: "other", raw: t.raw });
  }
  return out;
}

/** The service's own invisible marks, never block text: the renderer's `<!-- block:… -->`, a task's `<!-- task:… -->`. */
const SERVICE_MARK_RE = /^<!--\s*(block|task):/;
const rawOf = (tokens: Token[]): string =>
  tokens
    .filter((t) => !(t.type === "html" && SERVICE_MARK_RE.test(t.raw.trim())))
    .map((t) => t.raw)
    .join("")
    .trim();

/** Splits "Label: value" (label 1–5 words) into a normalised label and the value; null if the text has no label. */
function splitLabel(text: string): { label: string; value: string } | null {
  const m = /^([A-Za-z][A-Za-z '&/()-]{0,40}?)\s*:\s*([\s\S]*)$/.exec(text.trim());
  if (!m || m[1].trim().split(/\s+/).length > 5) return null;
  return { label: m[1].trim().toLowerCase().replace(/\s+/g, " "), value: m[2].trim() };
}

/** Maps a label to a field name by a synonyms table; undefined when the label is not a known field. */
function fieldOf(label: string, synonyms: Record<string, string[]>): string | undefined {
  const l = label.replace(/[()]/g, "").replace(/\s+/g, " ").trim();
  for (const [field, names] of Object.entries(synonyms)) if (names.includes(l)) return field;
  return undefined;
}

interface Collected {
  /** field → values from "Label: value" paragraphs, items under a "Label:" paragraph, and "Label: value" items. */
  fields: Map<string, { text: string; item?: Item }[]>;
  paras: Extract<Unit, { kind: "para" }>[];
  items: Item[];
  tables: Extract<Unit, { kind: "table" }>[];
  quotes: Extract<Unit, { kind: "quote" }>[];
  others: Extract<Unit, { kind: "other" }>[];
}

/**
 * Groups body units by field labels: a paragraph "Goals:" labels the list that follows it; "Impact: high" sets a
 * field; list items "Mitigation: …" set fields when `labelledItems` is on. Everything unlabelled stays in order.
 */
function collect(us: Unit[], synonyms: Record<string, string[]>, labelledItems = false): Collected {
  const c: Collected = { fields: new Map(), paras: [], items: [], tables: [], quotes: [], others: [] };
  const put = (f: string, v: { text: string; item?: Item }) => c.fields.set(f, [...(c.fields.get(f) ?? []), v]);
  let pending: string | undefined;
  for (const u of us) {
    if (u.kind === "para") {
      const sl = splitLabel(u.text);
      const f = sl && fieldOf(sl.label, synonyms);
      if (sl && f) {
        if (sl.value) {
          put(f, { text: sl.value });
          pending = undefined;
        } else pending = f;
        continue;
      }
      pending = undefined;
      c.paras.push(u);
    } else if (u.kind === "list") {
      for (const it of u.items) {
        const sl = labelledItems ? splitLabel(it.text) : null;
        const f = sl && fieldOf(sl.label, synonyms);
        if (sl && f && !pending) put(f, { text: sl.value, item: it });
        else if (pending) put(pending, { text: it.text, item: it });
        else c.items.push(it);
      }
      pending = undefined;
    } else if (u.kind === "table") c.tables.push(u);
    else if (u.kind === "quote") c.quotes.push(u);
    else c.others.push(u);
  }
  return c;
}

const values = (c: Collected, f: string) => (c.fields.get(f) ?? []).map((v) => v.text).filter(Boolean);
const first = (c: Collected, f: string) => values(c, f)[0];

function level(text: string | undefined): "low" | "medium" | "high" | undefined {
  if (!text) return undefined;
  const t = text.toLowerCase();
  if (/\b(high|critical|severe|very likely|likely)\b/.test(t) && !/\bunlikely\b/.test(t)) return "high";
  if (/\b(medium|med|moderate|possible)\b/.test(t)) return "medium";
  if (/\b(low|minor|unlikely|rare)\b/.test(t)) return "low";
  return undefined;
}

const QUOTE_RE = /[“"]([^“”"]{3,})[”"]/;

// ---------------------------------------------------------------------------------------------------------------
// Per-type builders
// ---------------------------------------------------------------------------------------------------------------

const SYN = {
  problem: {
    impact: ["impact", "why it matters", "cost", "business impact", "user impact"],
    evidence: ["evidence", "research", "what we heard", "quotes", "data", "supporting evidence"],
    affected_users: ["affected users", "who is affected", "users affected", "affected"],
    statement: ["problem statement", "problem", "statement"],
  },
  persona: {
    name: ["name", "persona"],
    description: ["description", "who", "about", "bio", "profile"],
    goals: ["goals", "needs", "jobs", "jobs to be done", "motivations", "wants"],
    pain_points: ["pain points", "pains", "frustrations", "challenges", "problems"],
    quote: ["quote"],
  },
  solution: {
    summary: ["summary", "overview"],
    details: ["details", "requirements", "features", "scope", "how it works", "functional requirements"],
    alternatives_considered: ["alternatives considered", "alternatives", "options considered", "other options"],
    non_goals: ["non-goals", "non goals", "out of scope", "not in scope"],
  },
  user_story: {
    acceptance_criteria: ["acceptance criteria", "acceptance", "criteria", "definition of done", "ac"],
    priority: ["priority"],
  },
  edge_case: {
    scenario: ["scenario", "case", "situation", "edge case"],
    expected_behavior: ["expected behavior", "expected behaviour", "expected", "behavior", "behaviour", "handling", "expected result"],
  },
  risk: {
    risk: ["risk", "description"],
    likelihood: ["likelihood", "probability", "chance"],
    impact: ["impact", "severity"],
    mitigation: ["mitigation", "mitigations", "mitigation plan", "response", "plan"],
    owner: ["owner", "dri"],
  },
} satisfies Record<string, Record<string, string[]>>;

function evidenceFromItem(it: Item): EvidenceItem | undefined {
  const ids = insightIds(it.tokens);
  const full = plain(it.tokens, { skipInsightLinks: true });
  const q = QUOTE_RE.exec(full);
  const quote = q?.[1].trim();
  let note = (q ? full.replace(q[0], " ") : full)
    .replace(/\(\s*\)/g, " ")
    .replace(/\s+/g, " ")
    .trim()
    .replace(/^[—–:,;-]+\s*/, "")
    .trim();
  if (note.length < 2) note = "";
  if (!ids[0] && !quote && !note) return undefined;
  const e: EvidenceItem = {};
  if (ids[0]) e.insight_id = ids[0];
  if (quote) e.quote = quote;
  if (note) e.note = note;
  return e;
}

function problemFrom(title: string, us: Unit[]): Unpositioned {
  const c = collect(us, SYN.problem);
  const evidence: EvidenceItem[] = [];
  for (const v of c.fields.get("evidence") ?? []) {
    const e = v.item ? evidenceFromItem(v.item) : { note: v.text };
    if (e) evidence.push(e);
  }
  for (const it of c.items) {
    const e = evidenceFromItem(it);
    if (e) evidence.push(e);
  }
  for (const q of c.quotes) {
    const ids = insightIds(q.tokens);
    const quote = plain(q.tokens, { skipInsightLinks: true }).replace(/^[“"]|[”"]$/g, "").trim();
    if (quote) evidence.push({ quote, ...(ids[0] ? { insight_id: ids[0] } : {}) });
  }
  const statement = [first(c, "statement"), ...c.paras.map((p) => p.text), ...c.others.map((o) => o.raw.trim())]
    .filter(Boolean)
    .join("\n\n");
  const content: Extract<Draft, { block_type: "problem" }>["content"] = {
    statement,
    evidence,
    impact: values(c, "impact").join(" "),
  };
  const au = first(c, "affected_users");
  if (au) content.affected_users = au;
  return { block_type: "problem", title, content };
}

function personaFrom(title: string, us: Unit[]): Unpositioned {
  const c = collect(us, SYN.persona);
  const goals = values(c, "goals");
  const pains = values(c, "pain_points");
  for (const it of c.items) (/\b(can'?t|cannot|hard|difficult|frustrat|slow|confus|annoy|fail|problem|pain|struggl|lost|too many)\b/i.test(it.text) ? pains : goals).push(it.text);
  const quoteUnit = c.quotes[0]?.text.replace(/^[“"]|[”"]$/g, "").trim() || first(c, "quote");
  const content: Extract<Draft, { block_type: "persona" }>["content"] = {
    name: first(c, "name") ?? title.replace(/^persona\s*[:—-]\s*/i, ""),
    description: [...values(c, "description"), ...c.paras.map((p) => p.text)].join("\n\n"),
    goals,
    pain_points: pains,
  };
  if (quoteUnit) content.quote = quoteUnit;
  return { block_type: "persona", title, content };
}

function personaFromItem(it: Item): Unpositioned {
  const lead = it.tokens.find((t) => t.type === "strong" || (t.type === "text" && t.tokens?.[0]?.type === "strong"));
  let name: string;
  let description: string;
  const m = /^(.{2,80}?)\s*(?:[—–:]|\s-\s)\s*([\s\S]+)$/.exec(it.text);
  if (m) [name, description] = [m[1], m[2]];
  else [name, description] = [it.text, ""];
  if (lead && !m) name = it.text;
  const sub = it.sub.map((s) => s.text);
  return {
    block_type: "persona",
    title: truncate(name, 120),
    content: { name: name.trim(), description: [description.trim(), ...sub].filter(Boolean).join("\n"), goals: [], pain_points: [] },
  };
}

function solutionFrom(title: string, us: Unit[]): Unpositioned {
  const c = collect(us, SYN.solution);
  const paras = [...c.paras.map((p) => p.text), ...c.others.map((o) => o.raw.trim())];
  const summary = first(c, "summary") ?? paras.shift() ?? "";
  const flatten = (it: Item): string => (it.sub.length ? `${it.text} (${it.sub.map(flatten).join("; ")})` : it.text);
  const fromField = (f: string) => (c.fields.get(f) ?? []).map((v) => (v.item ? flatten(v.item) : v.text)).filter(Boolean);
  return {
    block_type: "solution",
    title,
    content: {
      summary,
      details: [...paras, ...fromField("details"), ...c.items.map(flatten), ...c.quotes.map((q) => q.text), ...c.tables.map((t) => t.raw.trim())],
      alternatives_considered: fromField("alternatives_considered"),
      non_goals: fromField("non_goals"),
    },
  };
}

const COLS = {
  name: /^(metric|name|kpi|measure|indicator|what)$/,
  target: /^(target|goal|success|desired)/,
  baseline: /^(baseline|current|today|now|from|starting)/,
  measurement: /^(measurement|how|source|method|measured|data source|instrument)/,
  kind: /^(kind|type|category)$/,
};
const colIndex = (header: string[], re: RegExp) => header.findIndex((h) => re.test(h.trim().toLowerCase()));
const nonEmpty = (s: string | undefined) => (s && s.trim() ? s.trim() : undefined);

function metricFromText(text: string): Metric {
  const t = text.trim();
  const target = /\btargets?\s*:?\s*([^;()→]+?)(?=\s*(?:[;()→]|->|,?\s*baseline\b|$))/i.exec(t)?.[1];
  const baseline = /\bbaseline\s*:?\s*([^;()→]+?)(?=\s*(?:[;()→]|->|,?\s*target\b|$))/i.exec(t)?.[1];
  const fromTo = /\bfrom\s+(.+?)\s+to\s+(.+?)\s*(?:[.;]|$)/i.exec(t);
  const arrow = /(\S[^→]*?)\s*(?:→|->)\s*(.+)$/.exec(t);
  const split = /^(.{3,120}?)\s*(?::|\s[—–]\s|\s-\s)\s*(.+)$/.exec(t);
  let name = t;
  if (split && (target || baseline || fromTo || arrow || /\d|%/.test(split[2]))) name = split[1];
  const m: Metric = { name: stripEndPunct(name), target: "" };
  if (target) m.target = stripEndPunct(target);
  else if (fromTo) m.target = stripEndPunct(fromTo[2]);
  else if (arrow && split) m.target = stripEndPunct(arrow[2]);
  else if (split && name !== t) m.target = stripEndPunct(split[2]);
  else {
    const num = /((?:by|to|under|below|above|over|at least|at most|≥|≤|<|>)\s*[~≈]?\d[\d.,]*\s*(?:%|percent|pp|points|s|ms|seconds|minutes|days|x)?)/i.exec(t);
    if (num) m.target = num[1].trim();
  }
  if (baseline) m.baseline = stripEndPunct(baseline);
  else if (fromTo) m.baseline = stripEndPunct(fromTo[1].replace(/^.*\b(?:by|reduce|increase|cut|grow|raise|lower)\b\s*/i, ""));
  if (/guardrail/i.test(t)) m.kind = "guardrail";
  return m;
}

function metricsFrom(title: string, us: Unit[]): Unpositioned[] {
  const c = collect(us, {});
  const metrics: Metric[] = [];
  for (const tb of c.tables) {
    const h = tb.header;
    const ni = Math.max(0, colIndex(h, COLS.name));
    const ti = colIndex(h, COLS.target);
    const bi = colIndex(h, COLS.baseline);
    const mi = colIndex(h, COLS.measurement);
    const ki = colIndex(h, COLS.kind);
    for (const r of tb.rows) {
      if (!nonEmpty(r[ni])) continue;
      const m: Metric = { name: r[ni].trim(), target: ti >= 0 ? (r[ti] ?? "").trim() : "" };
      const b = bi >= 0 ? nonEmpty(r[bi]) : undefined;
      if (b) m.baseline = b;
      const me = mi >= 0 ? nonEmpty(r[mi]) : undefined;
      if (me) m.measurement = me;
      const k = ki >= 0 ? nonEmpty(r[ki])?.toLowerCase() : undefined;
      if (k === "primary" || k === "secondary" || k === "guardrail") m.kind = k;
      metrics.push(m);
    }
  }
  for (const it of c.items) metrics.push(metricFromText([it.text, ...it.sub.map((s) => s.text)].join("; ")));
  const rest = [...c.paras, ...c.quotes, ...c.others];
  const out: Unpositioned[] = [];
  if (!metrics.length && rest.length) {
    for (const p of c.paras) metrics.push(metricFromText(p.text));
    out.push({ block_type: "metrics", title, content: { metrics } });
    const leftover = [...c.quotes, ...c.others];
    if (leftover.length) out.push(freeText(`${title} — notes`, leftover.map((u) => u.raw.trim()).join("\n\n")));
    return out;
  }
  out.push({ block_type: "metrics", title, content: { metrics } });
  if (rest.length) out.push(freeText(`${title} — notes`, rest.map((u) => u.raw.trim()).join("\n\n")));
  return out;
}

const STORY_RE = /\bas an?\s+(.+?),?\s+I(?:\s+(?:want|need|would like|wish)|['’]d like)\s+(.+?)(?:,?\s+so that\s+(.+?))?\s*[.!]?$/is;

/** Parses "As a …, I want …, so that …" (the "so that" clause optional). */
export function parseStory(text: string): { as_a: string; i_want: string; so_that: string } | null {
  const m = STORY_RE.exec(text.replace(/\s+/g, " ").trim());
  if (!m) return null;
  return { as_a: m[1].trim(), i_want: m[2].trim(), so_that: (m[3] ?? "").trim() };
}

function priorityOf(text: string | undefined): "must" | "should" | "could" | "wont" | undefined {
  const t = text?.toLowerCase() ?? "";
  if (/\bmust\b|\bp0\b|\bhigh\b/.test(t)) return "must";
  if (/\bshould\b|\bp1\b|\bmedium\b/.test(t)) return "should";
  if (/\bcould\b|\bp2\b|\blow\b/.test(t)) return "could";
  if (/\bwon'?t\b|\bwont\b/.test(t)) return "wont";
  return undefined;
}

function storiesFrom(title: string, us: Unit[], single: boolean): Unpositioned[] {
  type S = { title: string; story: NonNullable<ReturnType<typeof parseStory>>; criteria: string[]; priority?: string; extra: string[] };
  const stories: S[] = [];
  let cur: S | undefined;
  let pendingLabel: "acceptance_criteria" | "priority" | undefined;
  const syn = SYN.user_story;
  const loose: string[] = [];
  for (const u of us) {
    if (u.kind === "para") {
      const story = parseStory(u.text);
      if (story && (!cur || !single)) {
        cur = { title: single ? title : truncate(`${upperFirst(story.i_want.replace(/^to\s+/i, ""))}`, 100), story, criteria: [], extra: [] };
        stories.push(cur);
        pendingLabel = undefined;
        continue;
      }
      const sl = splitLabel(u.text);
      const f = sl && fieldOf(sl.label, syn);
      if (sl && f) {
        if (f === "priority") {
          if (cur) cur.priority = sl.value;
        } else if (sl.value && cur) cur.criteria.push(sl.value);
        pendingLabel = sl.value ? undefined : (f as "acceptance_criteria" | "priority");
        continue;
      }
      if (/^(given|when|then|and)\b/i.test(u.text) && cur) {
        cur.criteria.push(u.text);
        continue;
      }
      (cur ? cur.extra : loose).push(u.text);
    } else if (u.kind === "list") {
      for (const it of u.items) {
        const story = !pendingLabel ? parseStory(it.text) : null;
        if (story) {
          cur = { title: truncate(upperFirst(story.i_want.replace(/^to\s+/i, "")), 100), story, criteria: it.sub.map((s) => s.text), extra: [] };
          stories.push(cur);
        } else if (cur) {
          if (pendingLabel === "priority") cur.priority = it.text;
          else cur.criteria.push(it.text);
        } else loose.push(it.text);
      }
      pendingLabel = undefined;
    } else (cur ? cur.extra : loose).push(u.raw.trim());
  }
  if (!stories.length) return [freeText(title, us.map((u) => u.raw.trim()).join("\n\n"))];
  // A lone story under a specific heading (not "User stories") takes that heading as its title.
  if (stories.length === 1 && classifyHeading(title) !== "user_story") stories[0].title = title;
  const out: Unpositioned[] = stories.map((s) => {
    const content: Extract<Draft, { block_type: "user_story" }>["content"] = {
      ...s.story,
      acceptance_criteria: [...s.criteria, ...s.extra],
    };
    const p = priorityOf(s.priority);
    if (p) content.priority = p;
    return { block_type: "user_story", title: s.title, content };
  });
  if (loose.length) out.unshift(freeText(`${title} — notes`, loose.join("\n\n")));
  return out;
}

function edgeCaseFromText(text: string, title?: string): Unpositioned {
  const t = text.trim();
  let scenario = t;
  let expected = "";
  const arrow = /^(.+?)\s*(?:→|->|=>)\s*(.+)$/s.exec(t);
  const labelled = /^(.+?)\s*(?:[—–]|:|\s-\s)\s*(.+)$/s.exec(t);
  const ifThen = /^((?:if|when|whenever|while|after|before)\b[^,]+),\s*(.+)$/is.exec(t);
  const should = /^(.+?)\s*[,;:]?\s+((?:the\s+)?(?:app|system|user|we|it|product|service|page|screen)\s+(?:should|must|will)\b.+)$/is.exec(t);
  if (arrow) [scenario, expected] = [arrow[1], arrow[2]];
  else if (labelled && labelled[1].length <= 200) [scenario, expected] = [labelled[1], labelled[2]];
  else if (ifThen) [scenario, expected] = [ifThen[1], ifThen[2]];
  else if (should) [scenario, expected] = [should[1], should[2]];
  scenario = stripEndPunct(scenario);
  expected = expected.trim();
  return {
    block_type: "edge_case",
    title: title ?? truncate(upperFirst(scenario), 100),
    content: { scenario, expected_behavior: expected ? upperFirst(expected) : "" },
  };
}

function edgeCasesFrom(title: string, us: Unit[], single: boolean): Unpositioned[] {
  const c = collect(us, SYN.edge_case);
  const sc = values(c, "scenario");
  const ex = values(c, "expected_behavior");
  if (sc.length || ex.length) {
    const rest = [...c.paras.map((p) => p.text), ...c.items.map((i) => i.text)];
    return [
      {
        block_type: "edge_case",
        title,
        content: {
          scenario: [sc.join("\n\n") || rest.shift() || ""].join(""),
          expected_behavior: [ex.join("\n\n"), ...rest].filter(Boolean).join("\n\n"),
        },
      },
    ];
  }
  if (single) {
    const texts = [...c.paras.map((p) => p.text), ...c.items.map((i) => i.text)];
    const e = edgeCaseFromText(texts.join(" "), title);
    return [e];
  }
  const out: Unpositioned[] = [];
  for (const it of c.items) out.push(edgeCaseFromText([it.text, ...it.sub.map((s) => s.text)].join(" ")));
  for (const tb of c.tables) {
    const si = Math.max(0, colIndex(tb.header, /^(scenario|case|edge case|situation|when)/));
    const ei = colIndex(tb.header, /^(expected|behaviou?r|handling|then|result)/);
    for (const r of tb.rows)
      out.push({
        block_type: "edge_case",
        title: truncate(r[si] ?? "", 100),
        content: { scenario: r[si] ?? "", expected_behavior: ei >= 0 ? (r[ei] ?? "") : "" },
      });
  }
  const paras = [...c.paras, ...c.quotes, ...c.others];
  if (!out.length) for (const p of c.paras) out.push(edgeCaseFromText(p.text));
  else if (paras.length) out.unshift(freeText(`${title} — notes`, paras.map((u) => u.raw.trim()).join("\n\n")));
  return out.length ? out : [freeText(title, us.map((u) => u.raw.trim()).join("\n\n"))];
}

const RISK_LABELS_RE = /\b(likelihood|probability|impact|severity|mitigation|mitigations|owner)\s*:/i;

function riskFromText(text: string, sub: string[], title?: string): Unpositioned {
  const all = [text, ...sub].join("; ");
  const cut = RISK_LABELS_RE.exec(text);
  const riskText = stripEndPunct((cut ? text.slice(0, cut.index) : text).replace(/[—–(;,-]+\s*$/, ""));
  const field = (re: RegExp) => re.exec(all)?.[1]?.trim();
  const content: Extract<Draft, { block_type: "risk" }>["content"] = {
    risk: riskText,
    mitigation: stripEndPunct(field(/\bmitigations?\s*:\s*([^;]+?)(?=\s*(?:;|\b(?:likelihood|probability|impact|severity|owner)\s*:|$))/i) ?? ""),
  };
  const lk = level(field(/\b(?:likelihood|probability)\s*:\s*([a-z -]+)/i));
  const im = level(field(/\b(?:impact|severity)\s*:\s*([a-z -]+)/i));
  const ow = field(/\bowner\s*:\s*([^;)]+)/i);
  if (lk) content.likelihood = lk;
  if (im) content.impact = im;
  if (ow) content.owner = stripEndPunct(ow);
  return { block_type: "risk", title: title ?? truncate(upperFirst(riskText), 100), content };
}

function risksFrom(title: string, us: Unit[], single: boolean): Unpositioned[] {
  const c = collect(us, SYN.risk, true);
  const labelled = ["likelihood", "impact", "mitigation", "owner", "risk"].some((f) => c.fields.has(f));
  if (single || (labelled && !c.items.length)) {
    const content: Extract<Draft, { block_type: "risk" }>["content"] = {
      risk: [first(c, "risk"), ...c.paras.map((p) => p.text), ...c.items.map((i) => i.text)].filter(Boolean).join("\n\n"),
      mitigation: values(c, "mitigation").join(" "),
    };
    const lk = level(first(c, "likelihood"));
    const im = level(first(c, "impact"));
    const ow = first(c, "owner");
    if (lk) content.likelihood = lk;
    if (im) content.impact = im;
    if (ow) content.owner = ow;
    if (!content.risk && !labelled) return [freeText(title, us.map((u) => u.raw.trim()).join("\n\n"))];
    return [{ block_type: "risk", title, content }];
  }
  const out: Unpositioned[] = [];
  for (const tb of c.tables) {
    const h = tb.header;
    const ri = Math.max(0, colIndex(h, /^(risk|description|what)/));
    const li = colIndex(h, /^(likelihood|probability)/);
    const ii = colIndex(h, /^(impact|severity)/);
    const mi = colIndex(h, /^(mitigation|response|plan)/);
    const oi = colIndex(h, /^(owner|dri)/);
    for (const r of tb.rows) {
      const content: Extract<Draft, { block_type: "risk" }>["content"] = { risk: r[ri] ?? "", mitigation: mi >= 0 ? (r[mi] ?? "") : "" };
      const lk = li >= 0 ? level(r[li]) : undefined;
      const im = ii >= 0 ? level(r[ii]) : undefined;
      if (lk) content.likelihood = lk;
      if (im) content.impact = im;
      if (oi >= 0 && nonEmpty(r[oi])) content.owner = r[oi].trim();
      out.push({ block_type: "risk", title: truncate(upperFirst(content.risk), 100), content });
    }
  }
  // Items that are themselves "Label: value" were collected as fields; with other items present, treat every item as a risk.
  const items = [...c.items];
  for (const f of ["likelihood", "impact", "mitigation", "owner", "risk"])
    for (const v of c.fields.get(f) ?? []) if (v.item) items.push(v.item);
  for (const it of items) out.push(riskFromText(it.text, it.sub.map((s) => s.text)));
  const rest = [...c.paras, ...c.quotes, ...c.others];
  if (!out.length) for (const p of c.paras) out.push(riskFromText(p.text, []));
  else if (rest.length) out.unshift(freeText(`${title} — notes`, rest.map((u) => u.raw.trim()).join("\n\n")));
  return out;
}

function whenOf(text: string): { week?: number; target_date?: string; rest: string } {
  let rest = text.trim();
  let week: number | undefined;
  let date: string | undefined;
  const paren = /\s*\(([^()]*)\)\s*$/.exec(rest);
  const scan = (s: string) => {
    const w = /\bweeks?\s*(\d{1,3})(?:\s*[–-]\s*(\d{1,3}))?/i.exec(s);
    if (w) week = Number(w[2] ?? w[1]);
    const d = /\b(\d{4}-\d{2}-\d{2})\b/.exec(s);
    if (d && !Number.isNaN(Date.parse(d[1]))) date = d[1];
  };
  if (paren && /\bweeks?\s*\d|\d{4}-\d{2}-\d{2}/i.test(paren[1])) {
    scan(paren[1]);
    rest = rest.slice(0, paren.index).trim();
  } else scan(rest);
  return { week, target_date: date, rest };
}

function milestoneFromItem(it: Item): Milestone {
  const strong = it.tokens.flatMap((t) => (t.type === "text" && t.tokens ? t.tokens : [t])).find((t) => t.type === "strong");
  let head = it.text;
  let tail = "";
  if (strong && it.text.startsWith(plain([strong]))) {
    head = plain([strong]);
    tail = it.text.slice(head.length).trim();
  } else {
    const m = /^(.{2,120}?)\s*(?::|\s[—–]\s)\s*(.+)$/.exec(it.text);
    if (m) [head, tail] = [m[1], m[2]];
  }
  // "(week 2, 2025-07-01): deliverable; deliverable" — a leading parenthetical or a bare date/week is the "when".
  let whenText = "";
  const lead = /^\s*\(([^()]*)\)\s*/.exec(tail);
  if (lead && /\bweeks?\s*\d|\d{4}-\d{2}-\d{2}/i.test(lead[1])) {
    whenText = lead[1];
    tail = tail.slice(lead[0].length);
  }
  tail = tail.replace(/^[:—–-]\s*/, "").trim();
  if (/^(?:weeks?\s*\d{1,3}(?:\s*[–-]\s*\d{1,3})?|\d{4}-\d{2}-\d{2})$/i.test(tail)) {
    whenText = `${whenText} ${tail}`;
    tail = "";
  }
  const w1 = whenOf(whenText ? `(${whenText})` : "");
  const w2 = whenOf(head);
  const deliverables = it.sub.length
    ? it.sub.map((s) => s.text)
    : tail
        .split(/\s*;\s*/)
        .map((s) => stripEndPunct(s))
        .filter(Boolean);
  const m: Milestone = { name: stripEndPunct(w2.rest), deliverables };
  const week = w1.week ?? w2.week;
  const date = w1.target_date ?? w2.target_date;
  if (week !== undefined) m.week = week;
  if (date) m.target_date = date;
  return m;
}

function timelineFrom(title: string, us: Unit[]): Unpositioned[] {
  const c = collect(us, {});
  const milestones: Milestone[] = [];
  for (const it of c.items) milestones.push(milestoneFromItem(it));
  for (const tb of c.tables) {
    const h = tb.header;
    const ni = Math.max(0, colIndex(h, /^(milestone|phase|name|what|stage)/));
    const wi = colIndex(h, /^(when|date|week|target|timing|by)/);
    const di = colIndex(h, /^(deliverables?|outputs?|scope|includes)/);
    for (const r of tb.rows) {
      const w = whenOf(wi >= 0 ? `(${r[wi] ?? ""})` : "");
      const m: Milestone = {
        name: r[ni] ?? "",
        deliverables: di >= 0 ? (r[di] ?? "").split(/\s*(?:;|<br\s*\/?>)\s*/).filter(Boolean) : [],
      };
      if (w.week !== undefined) m.week = w.week;
      if (w.target_date) m.target_date = w.target_date;
      milestones.push(m);
    }
  }
  const rest = [...c.paras, ...c.quotes, ...c.others];
  const out: Unpositioned[] = [];
  if (!milestones.length) {
    for (const p of c.paras) {
      const w = whenOf(p.text);
      const m: Milestone = { name: truncate(p.text, 300), deliverables: [] };
      if (w.week !== undefined) m.week = w.week;
      if (w.target_date) m.target_date = w.target_date;
      milestones.push(m);
    }
    out.push({ block_type: "timeline", title, content: { milestones } });
    const left = [...c.quotes, ...c.others];
    if (left.length) out.push(freeText(`${title} — notes`, left.map((u) => u.raw.trim()).join("\n\n")));
    return out;
  }
  out.push({ block_type: "timeline", title, content: { milestones } });
  if (rest.length) out.push(freeText(`${title} — notes`, rest.map((u) => u.raw.trim()).join("\n\n")));
  return out;
}

const freeText = (title: string, markdown: string): Unpositioned => ({ block_type: "free_text", title, content: { markdown: markdown.trim() } });

// ---------------------------------------------------------------------------------------------------------------
// Sections
// ---------------------------------------------------------------------------------------------------------------

interface Section {
  heading: string;
  marker?: BlockType;
  body: Token[];
}

const MARKER_RE = /^<!--\s*block:\s*([a-z_]+)\s*-->\s*$/;

function markerOf(t: Token | undefined): BlockType | undefined {
  if (!t || t.type !== "html") return undefined;
  const m = MARKER_RE.exec(t.raw.trim());
  return m && (BLOCK_TYPES as readonly string[]).includes(m[1]) ? (m[1] as BlockType) : undefined;
}

/** Splits tokens at headings of exactly `depth`; tokens before the first such heading come back as `pre`. */
function splitAt(tokens: Token[], depth: number): { pre: Token[]; sections: Section[] } {
  const pre: Token[] = [];
  const sections: Section[] = [];
  let cur: Section | undefined;
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    if (t.type === "heading" && t.depth === depth) {
      let marker: BlockType | undefined;
      const bucket = cur ? cur.body : pre;
      // a marker comment right before the heading (spaces aside) pins the type
      for (let j = bucket.length - 1; j >= 0; j--) {
        if (bucket[j].type === "space") continue;
        marker = markerOf(bucket[j]);
        if (marker) bucket.splice(j, 1);
        break;
      }
      cur = { heading: plain(t.tokens), marker, body: [] };
      sections.push(cur);
    } else (cur ? cur.body : pre).push(t);
  }
  return { pre, sections };
}

const isBlank = (ts: Token[]) => ts.every((t) => t.type === "space" || (t.type === "html" && /^<!--[\s\S]*-->\s*$/.test(t.raw.trim())));
const minHeadingDepth = (ts: Token[]) =>
  ts.reduce((m, t) => (t.type === "heading" ? Math.min(m, t.depth) : m), Number.POSITIVE_INFINITY);

const LABEL_HEADINGS = new Set(
  Object.values(SYN).flatMap((s) => Object.values(s).flat()),
);

/** Builds the blocks of one section of a known type. */
function sectionBlocks(type: BlockType, title: string, body: Token[]): Unpositioned[] {
  // Sub-sections (deeper headings) of multi-instance types become one block each, unless they are field labels.
  const subDepth = minHeadingDepth(body);
  const multi = type === "persona" || type === "user_story" || type === "edge_case" || type === "risk";
  if (Number.isFinite(subDepth) && type !== "free_text") {
    const { pre, sections } = splitAt(body, subDepth);
    const allLabels = sections.every((s) => LABEL_HEADINGS.has(s.heading.toLowerCase()));
    if (allLabels) {
      // "### Goals" etc.: treat heading text as a "Label:" paragraph.
      const flat: Token[] = [...pre];
      for (const s of sections) flat.push({ type: "paragraph", raw: `${s.heading}:`, text: `${s.heading}:`, tokens: [{ type: "text", raw: `${s.heading}:`, text: `${s.heading}:` }] } as Tokens.Paragraph, ...s.body);
      return sectionBlocks(type, title, flat);
    }
    if (type === "timeline") {
      // one milestone per sub-section: "### Beta (week 4)" with deliverables listed under it
      const milestones: Milestone[] = sections.map((s) => {
        const us = units(s.body);
        const w = whenOf(s.heading);
        const paraWhen = us.flatMap((u) => (u.kind === "para" ? [whenOf(u.text)] : []));
        const m: Milestone = { name: stripEndPunct(w.rest), deliverables: us.flatMap((u) => (u.kind === "list" ? u.items.map((i) => i.text) : [])) };
        const week = w.week ?? paraWhen.find((p) => p.week !== undefined)?.week;
        const date = w.target_date ?? paraWhen.find((p) => p.target_date)?.target_date;
        if (week !== undefined) m.week = week;
        if (date) m.target_date = date;
        return m;
      });
      const notes = isBlank(pre) ? [] : [freeText(`${title} — notes`, rawOf(pre))];
      return [{ block_type: "timeline", title, content: { milestones } }, ...notes];
    }
    if (multi) {
      const out: Unpositioned[] = isBlank(pre) ? [] : [freeText(`${title} — notes`, rawOf(pre))];
      for (const s of sections) out.push(...typedBlocks(s.marker ?? type, s.heading, s.body, true));
      return out;
    }
    // single-instance types: sub-headings fold into the body as labelled paragraphs
    const flat: Token[] = [...pre];
    for (const s of sections) flat.push({ type: "paragraph", raw: `${s.heading}:`, text: `${s.heading}:`, tokens: [{ type: "text", raw: `${s.heading}:`, text: `${s.heading}:` }] } as Tokens.Paragraph, ...s.body);
    return typedBlocks(type, title, flat, true);
  }
  return typedBlocks(type, title, body, false);
}

function typedBlocks(type: BlockType, title: string, body: Token[], single: boolean): Unpositioned[] {
  if (type === "free_text") return [freeText(title, rawOf(body))];
  const us = units(body);
  switch (type) {
    case "problem":
      return [problemFrom(title, us)];
    case "persona": {
      const c = collect(us, SYN.persona);
      const hasLabels = c.fields.size > 0;
      if (!single && !hasLabels && c.items.length && !c.paras.length) return c.items.map(personaFromItem);
      if (!single && !hasLabels && c.items.length && c.paras.length) {
        return [freeText(`${title} — notes`, c.paras.map((p) => p.raw.trim()).join("\n\n")), ...c.items.map(personaFromItem)];
      }
      return [personaFrom(title, us)];
    }
    case "solution":
      return [solutionFrom(title, us)];
    case "metrics":
      return metricsFrom(title, us);
    case "user_story":
      return storiesFrom(title, us, single);
    case "edge_case":
      return edgeCasesFrom(title, us, single);
    case "risk":
      return risksFrom(title, us, single);
    case "timeline":
      return timelineFrom(title, us);
  }
}

const ATTACH_TO_PROBLEM = /\b(evidence|what we heard|research findings|supporting data)\b/i;
const ATTACH_TO_SOLUTION = /\b(non-?goals?|out of scope|alternatives( considered)?)\b/i;

/**
 * Splits a Markdown document into typed block drafts (spec 01 `POST /api/blocks/extract`).
 *
 * - Sections are the headings of the shallowest level in use; a single leading `#` title above deeper sections is the
 *   document title and not a block. Text before the first section becomes a `free_text` "Introduction" block.
 * - Each section's type comes from a `<!-- block:<type> -->` marker when present, else {@link classifyHeading}.
 * - persona / user_story / edge_case / risk sections yield one block per sub-section, per list item (edge cases, risks,
 *   personas, "As a …" items) or per table row; metrics and timeline sections yield one block whose list is filled
 *   from the section's table rows or list items; "Evidence" sections after a problem add to its evidence, and
 *   "Non-goals" / "Alternatives" sections after a solution add to it.
 * - Prose that a typed block has no field for is kept in a following `free_text` "<section> — notes" block.
 * - A document without headings is one `free_text` block.
 *
 * @param markdown document content (CommonMark/GFM); any size — the lexer is linear in practice.
 * @returns blocks with `position` 0..n-1 in document order, each valid against its type's content schema.
 */
export function extractBlocks(markdown: string): BlockDraft[] {
  const tokens = Lexer.lex(markdown ?? "");
  const all = [...tokens];
  const headings = all.filter((t): t is Tokens.Heading => t.type === "heading");
  let docTitle: string | undefined;
  let body = all;
  const firstReal = all.findIndex((t) => t.type !== "space");
  const h1s = headings.filter((h) => h.depth === 1);
  if (firstReal >= 0 && all[firstReal].type === "heading" && (all[firstReal] as Tokens.Heading).depth === 1 && h1s.length === 1 && headings.length > 1) {
    docTitle = plain((all[firstReal] as Tokens.Heading).tokens);
    body = all.slice(firstReal + 1);
  }
  const depth = minHeadingDepth(body);
  const drafts: Unpositioned[] = [];
  if (!Number.isFinite(depth)) {
    const raw = rawOf(body);
    if (raw) drafts.push(freeText(docTitle ?? "Notes", raw));
  } else {
    const { pre, sections } = splitAt(body, depth);
    if (!isBlank(pre)) drafts.push(freeText("Introduction", rawOf(pre)));
    for (const s of sections) {
      const type = s.marker ?? classifyHeading(s.heading);
      const prev = drafts[drafts.length - 1];
      if (!s.marker && type === "problem" && ATTACH_TO_PROBLEM.test(s.heading) && prev?.block_type === "problem") {
        const add = problemFrom(s.heading, units(s.body));
        if (add.block_type === "problem") {
          const extra: EvidenceItem[] = add.content.statement ? [{ note: add.content.statement }] : [];
          prev.content.evidence.push(...extra, ...add.content.evidence);
        }
        continue;
      }
      if (!s.marker && type === "solution" && ATTACH_TO_SOLUTION.test(s.heading) && prev?.block_type === "solution") {
        const add = solutionFrom(s.heading, units(s.body));
        if (add.block_type === "solution") {
          const items = [add.content.summary, ...add.content.details].filter(Boolean);
          if (/alternative/i.test(s.heading)) prev.content.alternatives_considered.push(...items, ...add.content.alternatives_considered);
          else prev.content.non_goals.push(...items, ...add.content.non_goals);
        }
        continue;
      }
      if (!s.marker && type === "solution" && ATTACH_TO_SOLUTION.test(s.heading)) {
        const add = solutionFrom(s.heading, units(s.body));
        if (add.block_type === "solution") {
          const items = [add.content.summary, ...add.content.details].filter(Boolean);
          const content = { summary: "", details: [], alternatives_considered: [] as string[], non_goals: [] as string[] };
          if (/alternative/i.test(s.heading)) content.alternatives_considered = items;
          else content.non_goals = items;
          drafts.push({ block_type: "solution", title: s.heading, content });
        }
        continue;
      }
      drafts.push(...sectionBlocks(type, s.heading, s.body));
    }
  }
  return drafts
    .filter((d) => !(d.block_type === "free_text" && !d.content.markdown))
    .map((d, position) => BlockDraft.parse(fitToContract({ ...d, position })));
}

const LONG_FIELDS = new Set(["statement", "impact", "description", "summary", "scenario", "expected_behavior", "risk", "mitigation"]);

/** `s` cut to at most `n` characters, the last one "…"; never splits a surrogate pair. */
function cut(s: string, n: number): string {
  if (s.length <= n) return s;
  const end = /[\uD800-\uDBFF]/.test(s[n - 2] ?? "") ? n - 2 : n - 1;
  return `${s.slice(0, end)}…`;
}

/**
 * Clamps what extraction found to the contract's size limits (titles 500, long text fields 20,000, other strings
 * 2,000, free-text Markdown 100,000 characters; lists 100 items, metrics and milestones 50), so user content never
 * makes extraction fail. Clamping only happens on documents far beyond any realistic section.
 */
function fitToContract<T extends { title: string; content: unknown }>(d: T): T {
  const walk = (v: unknown, key: string): unknown => {
    if (typeof v === "string") return cut(v, key === "markdown" ? 100_000 : LONG_FIELDS.has(key) ? 20_000 : 2_000);
    if (Array.isArray(v)) return v.slice(0, key === "metrics" || key === "milestones" ? 50 : 100).map((x) => walk(x, key));
    if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, k)]));
    return v;
  };
  return { ...d, title: cut(d.title, 500), content: fitToBytes(walk(d.content, "")) };
}

/** Strings at most this long are never shortened by {@link fitToBytes} (names, ids, short list items). */
const KEEP_CHARS = 200;

/**
 * Shrinks content whose JSON exceeds the block content bound (BLOCK_CONTENT_BOUNDS.maxBytes) — each field can be
 * within its own limit while the sum is not. Each pass scales by the overshoot: long strings are cut first (to no
 * less than 200 characters); once none is left to cut, lists keep a proportional prefix (at least one item). Every
 * pass shrinks, and strings ≤ 200 characters in lists of one item are far below the bound, so it ends.
 * Extraction then stays within what a block may hold (the content is the source of truth; blocks are its view).
 */
function fitToBytes(content: unknown): unknown {
  let c = content;
  for (let size = jsonBytes(c); size > BLOCK_CONTENT_BOUNDS.maxBytes; size = jsonBytes(c)) {
    const ratio = (BLOCK_CONTENT_BOUNDS.maxBytes / size) * 0.95;
    let cutAny = false;
    const strings = (v: unknown): unknown => {
      if (typeof v === "string" && v.length > KEEP_CHARS) {
        cutAny = true;
        return cut(v, Math.max(KEEP_CHARS, Math.floor(v.length * ratio)));
      }
      if (Array.isArray(v)) return v.map(strings);
      if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, strings(x)]));
      return v;
    };
    const lists = (v: unknown): unknown => {
      if (Array.isArray(v)) return v.slice(0, Math.max(1, Math.floor(v.length * ratio))).map(lists);
      if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, lists(x)]));
      return v;
    };
    const next = strings(c);
    const shrunk = cutAny ? next : lists(c);
    // Unreachable with the block contracts (see above); a guard, so no content can make this loop forever.
    if (jsonBytes(shrunk) >= size) break;
    c = shrunk;
  }
  return c;
}

// ---------------------------------------------------------------------------------------------------------------
// Intent parsing
// ---------------------------------------------------------------------------------------------------------------

const CUES: { type: BlockType; re: RegExp; weight: number }[] = [
  { type: "risk", re: /\b(risks?|risky|concern(ed|s)?|worr(y|ied)|might break|could break|danger|compliance|legal|privacy|security|regress)/i, weight: 2 },
  { type: "edge_case", re: /\b(what if|edge case|corner case|offline|no (network|connection)|timeouts?|expired?|empty state|duplicate|at the same time|concurrent)/i, weight: 2 },
  { type: "timeline", re: /\b(by (q[1-4]|the end of|next (week|month|quarter)|january|february|march|april|may|june|july|august|september|october|november|december)|deadline|weeks?|sprints?|milestones?|launch (in|by|on)|release (in|by|on)|timeline|\d{4}-\d{2}-\d{2})/i, weight: 1.5 },
  { type: "metrics", re: /(\d+\s*(%|percent|pp\b)|\b(increase|reduce|decrease|cut|grow|improve|lower|raise)\b.*\b(by|to)\s+\d|\b(metric|kpi|conversion|retention|churn rate|nps|csat|completion rate|adoption|measure)s?\b)/i, weight: 2 },
  { type: "problem", re: /\b(can'?t|cannot|unable|hard to|difficult|struggl\w*|frustrat\w*|confus\w*|slow|broken|fails?|failing|failed|errors?|complain\w*|churn\w*|drop(s|ping)? off|abandon\w*|too (many|long|much)|pain( point)?s?|problems?|issues?|lose|losing|lost|annoy\w*|keeps?|repeatedly|never works?)\b/i, weight: 1 },
  { type: "solution", re: /\b(we should|should (add|build|let|allow|support|show)|let (users|them|people)|allow\w*|enable\w*|introduce|build|add(ing)?|support|propos\w*|idea|feature|implement\w*|redesign|automat\w*|provide|offer)\b/i, weight: 1 },
  { type: "persona", re: /\b(persona|our (users|customers)|(users|customers|people|teams|admins|managers|veterans|patients|students|developers) (who|that|with)|for (new|power|first-time|returning|mobile|enterprise|small|busy) \w+)\b/i, weight: 1.5 },
];

const PERSONA_RE =
  /\b(?:as an?|for|our|many|most|some)\s+((?:[a-z-]+\s){0,3}?(?:users?|customers?|admins?|administrators?|managers?|veterans?|developers?|teams?|owners?|members?|patients?|students?|teachers?|engineers?|designers?|buyers?|sellers?|people|staff|agents?|clinicians?|nurses?|doctors?|analysts?|operators?|parents?|drivers?|shoppers?))\b/i;

/**
 * Decomposes free text (a feature idea, a Slack message, meeting notes) into a block skeleton
 * (spec 01 `POST /api/intent/parse`).
 *
 * Heuristics, sentence by sentence (ICU sentence boundaries): "As a …, I want …" sentences become user stories;
 * other sentences are scored against keyword cues for risk, edge case, timeline, metric, problem, solution and
 * persona, and go to the best-scoring type. Personas are named from phrases like "for busy clinicians" / "our admins".
 * Metrics get a target when the sentence states one ("by 30%", "to 90%"). Sentences that match no cue are kept in a
 * `free_text` "Notes" block, so nothing the user wrote is lost.
 *
 * The result always contains a problem and a solution block (first and after the personas); when the text states no
 * problem or no solution, that block is present with an empty statement/summary for the user to fill in — the engine
 * does not invent one.
 *
 * @param rawText 1+ characters of free text.
 * @returns blocks with positions 0..n-1: problem, persona*, solution, user_story*, metrics?, edge_case*, risk*,
 *   timeline?, free_text?.
 */
export function parseIntent(rawText: string): BlockDraft[] {
  const ss = sentences(rawText ?? "");
  const buckets: Record<BlockType, string[]> = {
    problem: [], persona: [], solution: [], metrics: [], user_story: [], edge_case: [], risk: [], timeline: [], free_text: [],
  };
  const stories: NonNullable<ReturnType<typeof parseStory>>[] = [];
  const personaNames = new Set<string>();
  const personaStems = new Set<string>();
  const addPersona = (raw: string) => {
    const n = raw.toLowerCase().replace(/\s+/g, " ").trim();
    const key = n.split(" ").map(stem).join(" ");
    if (personaStems.has(key)) return;
    personaStems.add(key);
    personaNames.add(n);
  };
  for (const s of ss) {
    const p = PERSONA_RE.exec(s);
    if (p) addPersona(p[1]);
    const story = parseStory(s);
    if (story) {
      stories.push(story);
      addPersona(story.as_a);
      continue;
    }
    let best: BlockType = "free_text";
    let bestScore = 0;
    for (const c of CUES) {
      const hits = s.match(new RegExp(c.re.source, "gi"))?.length ?? 0;
      const score = hits * c.weight;
      if (score > bestScore) [best, bestScore] = [c.type, score];
    }
    buckets[best].push(s);
  }
  const out: Unpositioned[] = [];
  out.push({ block_type: "problem", title: "Problem", content: { statement: buckets.problem.join(" "), evidence: [], impact: "" } });
  const personaSentences = buckets.persona;
  const names = [...personaNames];
  if (names.length) {
    for (const n of names) {
      const key = stem(n.split(" ").pop() ?? n);
      const mentions = (s: string) => s.toLowerCase().includes(n) || keywords(s).includes(key);
      const about = [...personaSentences, ...buckets.problem].filter(mentions);
      out.push({
        block_type: "persona",
        title: upperFirst(n),
        content: {
          name: upperFirst(n),
          description: personaSentences.filter(mentions).join(" "),
          goals: [],
          pain_points: about.filter((s) => buckets.problem.includes(s)),
        },
      });
    }
    const unnamed = personaSentences.filter((s) => !names.some((n) => s.toLowerCase().includes(n)));
    buckets.free_text.unshift(...unnamed);
  } else if (personaSentences.length) {
    out.push({ block_type: "persona", title: "Persona", content: { name: "", description: personaSentences.join(" "), goals: [], pain_points: [] } });
  }
  out.push({ block_type: "solution", title: "Solution", content: { summary: buckets.solution[0] ?? "", details: buckets.solution.slice(1), alternatives_considered: [], non_goals: [] } });
  for (const st of stories)
    out.push({ block_type: "user_story", title: truncate(upperFirst(st.i_want.replace(/^to\s+/i, "")), 100), content: { ...st, acceptance_criteria: [] } });
  if (buckets.metrics.length) out.push({ block_type: "metrics", title: "Success metrics", content: { metrics: buckets.metrics.map(metricFromText) } });
  for (const s of buckets.edge_case) out.push(edgeCaseFromText(s));
  for (const s of buckets.risk)
    out.push({ block_type: "risk", title: truncate(upperFirst(stripEndPunct(s)), 100), content: { risk: stripEndPunct(s), mitigation: "" } });
  if (buckets.timeline.length) {
    out.push({
      block_type: "timeline",
      title: "Timeline",
      content: {
        milestones: buckets.timeline.map((s) => {
          const w = whenOf(s);
          const m: Milestone = { name: truncate(stripEndPunct(s), 300), deliverables: [] };
          if (w.week !== undefined) m.week = w.week;
          if (w.target_date) m.target_date = w.target_date;
          return m;
        }),
      },
    });
  }
  if (buckets.free_text.length) out.push(freeText("Notes", buckets.free_text.join("\n\n")));
  return out.map((d, position) => BlockDraft.parse(fitToContract({ ...d, position })));
}

/** @internal exported for tests of the list-item parsers. */
export const _internal = { metricFromText, edgeCaseFromText, riskFromText, whenOf, splitLabel };
