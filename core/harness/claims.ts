/**
 * What an answer claims, read from its text (issue #21 post-flight): the statements it makes and, per statement, the
 * ids it cites, the quotes it attributes and the counts it states. Pure: the contract judges the form, the verifier
 * (./verifier.ts) checks the claims against the table. Both engines write the same shapes (the system prompt asks the
 * model for them; the local engine writes them by construction):
 *
 * - a citation is an id after its kind: `[insight <uuid>]`, `[source <uuid>]`, `[recommendation <uuid>]`,
 *   `[document <uuid>]`, `pending action <uuid>`; a bare UUID is an id of unknown kind;
 * - a quote is text in “…” or "…" of at least {@link MIN_QUOTE_WORDS} words; it is attributed to the source (or
 *   insight) its statement cites;
 * - a count is "N research sources", "N <source kind>" inside that statement, "(N completed)", "N sources" /
 *   "N mentions" on a statement that cites one insight or source, and "has N insights|recommendations|documents".
 */

/** Kinds of thing an answer may cite. */
export type CitedKind = "insight" | "source" | "recommendation" | "document" | "pending_action" | "any";

export interface CitedId {
  kind: CitedKind;
  id: string;
}

export interface QuoteClaim {
  text: string;
  /** The source the statement cites, when it cites one. */
  sourceId?: string;
  /** The insight the statement cites, when it cites one (and no source). */
  insightId?: string;
}

/** A count the answer states, and what it counts. */
export type CountClaim =
  | { what: "sources_total"; n: number }
  | { what: "sources_of_type"; type: string; n: number }
  | { what: "sources_with_status"; status: string; n: number }
  | { what: "workspace_total"; kind: "insight" | "recommendation" | "document" | "source"; n: number }
  | { what: "insight_sources"; insightId: string; n: number }
  | { what: "source_mentions"; sourceId: string; n: number };

/** One statement of an answer (a list item, a paragraph line) with what it claims. */
export interface Statement {
  index: number;
  text: string;
  ids: CitedId[];
  quotes: QuoteClaim[];
  counts: CountClaim[];
}

/** Quotes shorter than this are names or scare quotes, not statements of a user. */
export const MIN_QUOTE_WORDS = 4;

const UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";
const CITED = new RegExp(`\\[(insight|source|recommendation|document)\\s+(${UUID})\\]|pending action\\W{0,3}(${UUID})|(${UUID})`, "gi");
const QUOTED = /“([^“”\n]+)”|"([^"\n]+)"/g;

/** Source types as an answer names them (the local engine's words, and the obvious plurals). */
export const SOURCE_KIND_WORDS: { type: string; re: RegExp }[] = [
  { type: "interview", re: /^interviews?$/i },
  { type: "survey", re: /^surveys?$/i },
  { type: "support_ticket", re: /^support tickets?$/i },
  { type: "usage_data", re: /^usage data sources?$/i },
  { type: "feedback", re: /^feedback sources?$/i },
  { type: "other", re: /^other sources?$/i },
];
const STATUSES = ["completed", "pending", "failed"];

const words = (s: string) => s.trim().split(/\s+/).filter(Boolean).length;

/** The statements of an answer: non-blank lines that are not headings, rules or link definitions. */
export function statementsOf(text: string): Statement[] {
  const out: Statement[] = [];
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line || /^#{1,6}\s/.test(line) || /^[-*_]{3,}$/.test(line) || /^\[[^\]]+\]:\s/.test(line)) continue;
    out.push(parseStatement(out.length, line));
  }
  return out;
}

function parseStatement(index: number, line: string): Statement {
  const ids: CitedId[] = [];
  for (const m of line.matchAll(CITED)) {
    if (m[1]) ids.push({ kind: m[1].toLowerCase() as CitedKind, id: m[2]!.toLowerCase() });
    else if (m[3]) ids.push({ kind: "pending_action", id: m[3].toLowerCase() });
    else if (m[4]) ids.push({ kind: "any", id: m[4].toLowerCase() });
  }
  const sourceId = ids.find((i) => i.kind === "source")?.id;
  const insightId = ids.find((i) => i.kind === "insight")?.id;
  const quotes: QuoteClaim[] = [];
  for (const m of line.matchAll(QUOTED)) {
    const text = (m[1] ?? m[2] ?? "").trim();
    if (words(text) < MIN_QUOTE_WORDS) continue;
    quotes.push({ text, ...(sourceId ? { sourceId } : insightId ? { insightId } : {}) });
  }
  return { index, text: line, ids, quotes, counts: countsOf(line, ids) };
}

function countsOf(line: string, ids: CitedId[]): CountClaim[] {
  const counts: CountClaim[] = [];
  const total = /\b(\d+) research sources?\b/i.exec(line);
  if (total) {
    counts.push({ what: "sources_total", n: Number(total[1]) });
    // "3 research sources: 2 interviews, 1 support ticket (3 completed)"
    const tail = line.slice(total.index + total[0].length);
    for (const m of tail.matchAll(/\b(\d+) ([a-z]+(?: [a-z]+){0,2}?)(?=[,.;:)]|\s\(|$)/gi)) {
      const kind = SOURCE_KIND_WORDS.find((k) => k.re.test(m[2]!.trim()));
      if (kind) counts.push({ what: "sources_of_type", type: kind.type, n: Number(m[1]) });
      else if (STATUSES.includes(m[2]!.trim().toLowerCase())) counts.push({ what: "sources_with_status", status: m[2]!.trim().toLowerCase(), n: Number(m[1]) });
    }
  }
  const single = ids.filter((i) => i.kind === "insight" || i.kind === "source");
  if (single.length === 1) {
    const it = single[0]!;
    const n = /\b(\d+) sources?\b/i.exec(line);
    if (it.kind === "insight" && n) counts.push({ what: "insight_sources", insightId: it.id, n: Number(n[1]) });
    const mentions = /\b(\d+) mentions?\b/i.exec(line);
    if (it.kind === "source" && mentions) counts.push({ what: "source_mentions", sourceId: it.id, n: Number(mentions[1]) });
  } else if (single.length === 0 && !total) {
    // A statement about the workspace as a whole: "has 4 insights", "(3 sources, 2 insights, 1 recommendations, ...)".
    for (const m of line.matchAll(/(?:\bhas |\bhave |\(|, )(\d+) (sources|insights|recommendations|documents)\b/gi)) {
      const kind = m[2]!.toLowerCase().replace(/s$/, "") as "source" | "insight" | "recommendation" | "document";
      counts.push({ what: "workspace_total", kind, n: Number(m[1]) });
    }
  }
  return counts;
}

/** Every id an answer cites, once each. */
export function citedIds(statements: Statement[]): CitedId[] {
  const seen = new Map<string, CitedId>();
  for (const s of statements) for (const c of s.ids) if (!seen.has(c.id) || seen.get(c.id)!.kind === "any") seen.set(c.id, c);
  return [...seen.values()];
}

/** Quoted spans of a text (“…” or "…", at least MIN_QUOTE_WORDS words), for the mid-stream check. */
export function quotedSpans(text: string): string[] {
  return [...text.matchAll(QUOTED)].map((m) => (m[1] ?? m[2] ?? "").trim()).filter((q) => words(q) >= MIN_QUOTE_WORDS);
}

/** Whether a text cites anything at all (an id in any of the forms above). */
export const citesAnything = (text: string): boolean => new RegExp(UUID, "i").test(text);

/**
 * Text normalised for verbatim comparison: quote styles, dashes and whitespace unified (every run of whitespace is
 * one space), lower case. The whitespace rule touches only what differs from one space (a run of two or more, or a
 * tab, newline or other space character): replacing every single space by itself made this 3-4 times slower, and the
 * harness's pre-flight normalises every insight's text on each chat (25,000 texts at 5,000 insights).
 */
export function normalise(s: string): string {
  return s
    .replace(/[“”„‟″]/g, '"')
    .replace(/[‘’‚‛′]/g, "'")
    .replace(/[–—]/g, "-")
    .replace(/…/g, "...")
    .replace(/\s{2,}|[^\S ]/g, " ")
    .trim()
    .toLowerCase();
}

/** A quote as it is compared: normalised, without the ellipses a writer puts at a cut. */
export const quoteKey = (q: string): string => normalise(q).replace(/^\.\.\.\s*|\s*\.\.\.$/g, "").trim();
