/**
 * Ranking of insight search (spec 01 Insights: `POST /api/insights/search`), pure: no I/O.
 *
 * Hybrid: a BM25 lexical ranking (MiniSearch over title and description, equally weighted) and a vector ranking (cosine
 * of the query's embedding with each insight's int8 search vector) fused by reciprocal rank fusion,
 * `score(d) = Σ 1 / (RRF_K + rank_i(d))` over the two lists. Lexical catches exact words a small sentence encoder
 * blurs ("login problems" finds the log-in insights rather than "loading server not connected"); vectors catch
 * paraphrases that share no word. RRF needs no score calibration between the two, which is why it is used.
 * A candidate is in the vector list when its cosine is at least `MIN_RELEVANCE`, in the lexical list when it shares
 * a term with the query; `total` counts the union after the filters.
 *
 * The text fallback (`textRank`) is the spec's: case-insensitive substring match on title and description, title
 * matches first, newest first within each.
 */
import MiniSearch from "minisearch";
import { int8Scores, type Int8Matrix } from "../ai/vectors";
import type { SearchRow } from "./search-index";

/** RRF's rank offset (the usual 60: the top ranks of both lists weigh about the same, later ranks fade slowly). */
export const RRF_K = 60;
/** Lowest cosine a vector hit needs to be a candidate (Universal Sentence Encoder and Titan put unrelated text below it). */
export const MIN_RELEVANCE = 0.25;
/**
 * BM25 weight of a title match relative to a description match. 1: boosting titles (2, 3, 5 tried) lowered
 * precision@5 on the relevance set (test/fixtures/relevance): a synthesized insight's description names its key
 * terms ("concern “appointment”, “notice” and “claim”") as much as its title does.
 */
const TITLE_BOOST = 1;

/** The spec's search filters. */
export interface SearchFilters {
  insight_type?: string;
  severity?: string;
  min_frequency?: number;
}

/** One ranked insight: its row and its score in (0, 1], higher is better. */
export interface Ranked {
  row: SearchRow;
  score: number;
}

const STOPWORDS = new Set(
  "a an and are as at be been but by can could do does for from had has have how i if in into is it its me my no not of on or our so than that the their them then there these they this to too was we were what when where which who why will with would you your".split(" "),
);

/** Suffixes stripped from longer words so inflections and derivations meet ("scheduling", "scheduled", "schedules"). */
const SUFFIX = /(?:ations?|ments?|ings?|ers?|ed|es|s)$/;

/**
 * A term as both the index and the query see it: lower case, apostrophes dropped, a common suffix removed from longer
 * words and a plural from shorter ones, a doubled final consonant undone and a silent final "e" dropped ("logins" meets
 * "login", "crashes" meets "crash", "scheduling" meets "schedule"; the rule of the synthesis engine's clustering,
 * core/ai/synthesis/cluster.ts, not imported from there because that module loads the NLP model). Stop words and
 * one-letter terms are dropped.
 */
export function normalizeTerm(term: string): string | null {
  let w = term.toLowerCase().replace(/['’]/g, "");
  if (w.length < 2 || STOPWORDS.has(w)) return null;
  if (w.length > 5) w = w.replace(SUFFIX, "");
  else if (w.length > 3 && w.endsWith("s") && !w.endsWith("ss")) w = w.slice(0, -1);
  if (/([b-df-hj-np-tv-z])\1$/.test(w)) w = w.slice(0, -1);
  if (w.length > 4 && w.endsWith("e")) w = w.slice(0, -1);
  return w;
}

type LexicalDoc = { id: string; title: string; description: string };

/** A workspace's rows made searchable: the lexical index, and a vector matrix per embedder, built on first use. */
export interface RankIndex {
  rows: SearchRow[];
  /** Row index by insight id (the lexical index's document ids). */
  rowById: Map<string, number>;
  lexical: MiniSearch<LexicalDoc>;
  /** Whether the lexical index was built here (not loaded from its serialized form). */
  lexicalBuilt: boolean;
  /** Matrix of the rows with a vector of that embedder, and which row each matrix row is. */
  matrices: Map<string, { matrix: Int8Matrix; rowOf: Int32Array }>;
}

const LEXICAL_OPTIONS = {
  fields: ["title", "description"],
  storeFields: [],
  processTerm: (t: string) => normalizeTerm(t) ?? false,
  searchOptions: { boost: { title: TITLE_BOOST }, prefix: false, fuzzy: false, combineWith: "OR" as const },
};

/**
 * Index rows for ranking (BM25 over title and description). Building the lexical index is linear in the text (about
 * 0.15 s for 5,000 insights on one idle core); given `lexicalJson` (a `serializeLexical` of the same rows) it is loaded
 * instead, about five times faster.
 */
export function buildIndex(rows: SearchRow[], lexicalJson?: string): RankIndex {
  const rowById = new Map(rows.map((r, i) => [r.id, i]));
  let lexical: MiniSearch<LexicalDoc>;
  if (lexicalJson) {
    lexical = MiniSearch.loadJSON<LexicalDoc>(lexicalJson, LEXICAL_OPTIONS);
  } else {
    lexical = new MiniSearch<LexicalDoc>(LEXICAL_OPTIONS);
    lexical.addAll(rows.map((r) => ({ id: r.id, title: r.title, description: r.description })));
  }
  return { rows, rowById, lexical, lexicalBuilt: !lexicalJson, matrices: new Map() };
}

/** The lexical index as JSON (MiniSearch's own serialization), for `buildIndex(rows, json)`. */
export const serializeLexical = (index: RankIndex): string => JSON.stringify(index.lexical);

/** The rows with a vector of `embedderId` as one int8 matrix (cached on the index). */
export function matrixFor(index: RankIndex, embedderId: string): { matrix: Int8Matrix; rowOf: Int32Array } | null {
  let m = index.matrices.get(embedderId);
  if (!m) {
    const picked: number[] = [];
    let dims = 0;
    index.rows.forEach((r, i) => {
      if (r.embedder_id === embedderId && r.codes && (dims === 0 || r.codes.length === dims)) {
        dims = r.codes.length;
        picked.push(i);
      }
    });
    const data = new Int8Array(picked.length * dims);
    const scales = new Float32Array(picked.length);
    picked.forEach((i, k) => {
      data.set(index.rows[i]!.codes!, k * dims);
      scales[k] = index.rows[i]!.scale;
    });
    m = { matrix: { data, scales, rows: picked.length, dims }, rowOf: Int32Array.from(picked) };
    index.matrices.set(embedderId, m);
  }
  return m.matrix.rows > 0 ? m : null;
}

/** Whether the index has any vector of this embedder (else vector search is unavailable for it: text fallback). */
export const hasVectors = (index: RankIndex, embedderId: string): boolean => matrixFor(index, embedderId) !== null;

const passes = (f: SearchFilters) => (r: SearchRow) =>
  (!f.insight_type || r.insight_type === f.insight_type) && (!f.severity || r.severity === f.severity) && (!f.min_frequency || r.frequency >= f.min_frequency);

/**
 * The BM25 list: rows sharing a term with the query, best first, filters applied (row indexes). Needs no embedding, so
 * a search computes it while the query's embedding is under way (`hybridRank`'s last parameter).
 */
export function lexicalHits(index: RankIndex, query: string, filters: SearchFilters): number[] {
  const ok = passes(filters);
  // A serialized lexical index may name an insight whose row has gone since (it is then skipped).
  return index.lexical
    .search(query)
    .map((h) => index.rowById.get(h.id as string))
    .filter((i): i is number => i !== undefined && ok(index.rows[i]!));
}

/** Vector candidates fused with their rank, at most: deeper ones (cosine ≥ MIN_RELEVANCE still) count in `total` only. */
export const VECTOR_DEPTH = 1_000;

/**
 * The `want` best of `items` by `score` (descending; ties by `tie`, descending), sorted. Past a few times `want` items it
 * first finds the `want`-th best score with a typed-array sort (no comparator calls), so 50,000 candidates cost a few
 * milliseconds instead of a full comparator sort.
 */
function best(items: number[], score: (i: number) => number, tie: (i: number) => number, want: number): number[] {
  let pool = items;
  if (Number.isFinite(want) && items.length > 4 * want && want > 0) {
    const sorted = Float64Array.from(items, score).sort();
    const threshold = sorted[sorted.length - want]!;
    pool = items.filter((i) => score(i) >= threshold);
  }
  return pool.sort((a, b) => score(b) - score(a) || tie(b) - tie(a)).slice(0, Number.isFinite(want) ? want : undefined);
}

/**
 * Hybrid ranking (module comment): BM25 and vector lists fused by RRF, filters applied to both. The vector list takes
 * part with its first `VECTOR_DEPTH` candidates (a later rank would add less than 1 / (RRF_K + VECTOR_DEPTH) ≈ 0.001
 * of RRF score, against about 0.016 for a first place).
 * @param queryVector the query's unit-length embedding by `embedderId`
 * @param want how many of the best candidates to return (all by default)
 * @param lexical `lexicalHits` of the same query and filters, when computed already
 * @returns the best `want` candidates, best first, with score = RRF score / (2 / (RRF_K + 1)) (first in both lists is
 *   1); and `total`, every candidate (in either list) after the filters
 */
export function hybridRank(
  index: RankIndex,
  query: string,
  queryVector: Float32Array,
  embedderId: string,
  filters: SearchFilters,
  want = Infinity,
  lexical: number[] = lexicalHits(index, query, filters),
): { ranked: Ranked[]; total: number } {
  const ok = passes(filters);
  const cosine = new Float32Array(index.rows.length).fill(-2);
  const candidates: number[] = [];
  const m = matrixFor(index, embedderId);
  if (m && m.matrix.dims === queryVector.length) {
    const scores = int8Scores(m.matrix, queryVector);
    for (let k = 0; k < m.matrix.rows; k++) {
      const i = m.rowOf[k]!;
      if (scores[k]! >= MIN_RELEVANCE && ok(index.rows[i]!)) {
        cosine[i] = scores[k]!;
        candidates.push(i);
      }
    }
  }
  const vector = best(candidates, (i) => cosine[i]!, (i) => -i, VECTOR_DEPTH);
  const fused = new Map<number, number>();
  lexical.forEach((i, rank) => fused.set(i, 1 / (RRF_K + rank + 1)));
  vector.forEach((i, rank) => fused.set(i, (fused.get(i) ?? 0) + 1 / (RRF_K + rank + 1)));
  const total = candidates.length + lexical.filter((i) => cosine[i]! < MIN_RELEVANCE).length;
  const max = 2 / (RRF_K + 1);
  const createdAt = (i: number) => Date.parse(index.rows[i]!.created_at) || 0;
  const top = best([...fused.keys()], (i) => fused.get(i)!, (i) => cosine[i]! * 1e15 + createdAt(i) / 1e3, want);
  return { ranked: top.map((i) => ({ row: index.rows[i]!, score: fused.get(i)! / max })), total };
}

/**
 * The spec's text fallback: insights whose title or description contains the query (case-insensitive); title
 * matches (score 1) before description matches (0.5), newest first within each.
 */
export function textRank(rows: SearchRow[], query: string, filters: SearchFilters): Ranked[] {
  const needle = query.toLowerCase();
  const ok = passes(filters);
  return rows
    .filter((r) => ok(r) && (r.title.toLowerCase().includes(needle) || r.description.toLowerCase().includes(needle)))
    .map((row) => ({ row, score: row.title.toLowerCase().includes(needle) ? 1 : 0.5 }))
    .sort((a, b) => b.score - a.score || b.row.created_at.localeCompare(a.row.created_at));
}
