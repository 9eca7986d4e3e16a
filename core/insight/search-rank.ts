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
  matrices: Map<string, RowMatrix>;
}

/** The rows with a vector of one embedder as an int8 matrix, with its SIMD scorer when the runtime has one. */
export interface RowMatrix {
  matrix: Int8Matrix;
  /** Row of `RankIndex.rows` of each matrix row. */
  rowOf: Int32Array;
  /** The matrix lives in this scorer's WebAssembly memory (`matrix.data` is a view of it). */
  simd: SimdScorer | null;
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

/** The rows with a vector of `embedderId` as one int8 matrix (cached on the index), in WebAssembly memory when SIMD is there. */
export function matrixFor(index: RankIndex, embedderId: string): RowMatrix | null {
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
    const simd = picked.length > 0 ? simdScorer(picked.length, dims) : null;
    const data = simd ? simd.data : new Int8Array(picked.length * dims);
    const scales = new Float32Array(picked.length);
    picked.forEach((i, k) => {
      data.set(index.rows[i]!.codes!, k * dims);
      scales[k] = index.rows[i]!.scale;
    });
    m = { matrix: { data, scales, rows: picked.length, dims }, rowOf: Int32Array.from(picked), simd };
    index.matrices.set(embedderId, m);
  }
  return m.matrix.rows > 0 ? m : null;
}

/**
 * Cosine of the query with every row of the matrix: `int8Scores` (core/ai/vectors.ts), or the same dot products by
 * WebAssembly SIMD when the matrix has a scorer: about ten times faster (5,000 × 512 in about 0.5 ms instead of 5). The
 * SIMD path rounds the query to 14-bit integers (|error| of a score below 1e-3, far under the gaps ranking sees).
 * @param queryVector the query's embedding, `dims` long
 * @returns the scores by matrix row
 */
export function matrixScores(m: RowMatrix, queryVector: Float32Array): Float32Array {
  if (!m.simd) return int8Scores(m.matrix, queryVector);
  return m.simd.scores(queryVector, m.matrix.scales);
}

// ---------------------------------------------------------------------------------------------------------------
// WebAssembly SIMD scorer

/** A matrix in WebAssembly memory with the function that scores a query against all of its rows. */
export interface SimdScorer {
  /** The matrix bytes (rows × dims), a view of the module's memory: fill it once, then score. */
  data: Int8Array;
  /** Scores of a query against every row, each times its row's scale (`scales`). */
  scores(queryVector: Float32Array, scales: Float32Array): Float32Array;
}

/**
 * The query's integer scale: 8,191 (14 bits) keeps every row's i32 sum inside 2^31 for up to 2,048 dimensions
 * (2,048 × 128 × 8,191 < 2^31), and rounds a unit query's components by under 1e-4 of the largest.
 */
const QUERY_INT_MAX = 8_191;
const SIMD_MAX_DIMS = 2_048;

/**
 * A WebAssembly module of one function, `dot(data, query, rows, dims, out)`: for each of `rows` rows of `dims` int8
 * bytes from `data`, the dot product with `dims` int16 values at `query`, as i32 at `out + 4 × row`. 16 bytes a step:
 * `v128.load` of the row, both halves sign-extended to i16x8, `i32x4.dot_i16x8_s` with the query's two i16x8 halves,
 * added into an i32x4 accumulator, whose lanes are summed at the row's end. `dims` must be a multiple of 16. Assembled
 * here (no WebAssembly toolchain in the build for about 240 bytes); a test checks it against `int8Scores`.
 */
function dotModuleBytes(): Uint8Array {
  const uleb = (n: number): number[] => {
    const out: number[] = [];
    do {
      let b = n & 0x7f;
      n >>>= 7;
      if (n) b |= 0x80;
      out.push(b);
    } while (n);
    return out;
  };
  const vec = (items: number[][]) => [...uleb(items.length), ...items.flat()];
  const section = (id: number, body: number[]) => [id, ...uleb(body.length), ...body];
  const name = (s: string) => [...uleb(s.length), ...Buffer.from(s)];
  const I32 = 0x7f;
  const V128 = 0x7b;
  const get = (i: number) => [0x20, i];
  const set = (i: number) => [0x21, i];
  const i32 = (n: number) => [0x41, n]; // small non-negative constants only (< 64)
  const simd = (op: number, ...imm: number[]) => [0xfd, ...uleb(op), ...imm];
  const load = (offset: number) => simd(0x00, 0, offset); // v128.load, align 1, offset < 128
  const zero = simd(0x0c, ...new Array<number>(16).fill(0)); // v128.const 0
  const extendLow = simd(0x87); // i16x8.extend_low_i8x16_s
  const extendHigh = simd(0x88); // i16x8.extend_high_i8x16_s
  const dot = simd(0xba); // i32x4.dot_i16x8_s
  const add = simd(0xae); // i32x4.add
  const lane = (l: number) => simd(0x1b, l); // i32x4.extract_lane
  const [ADD, GE_U, SHL, BLOCK, LOOP, BR, BR_IF, END, STORE] = [0x6a, 0x4f, 0x74, 0x02, 0x03, 0x0c, 0x0d, 0x0b, 0x36];
  const VOID = 0x40;
  // Parameters 0-4: data, query, rows, dims, out; locals 5-9: r, i, p (row pointer), qa (query pointer), acc.
  const [DATA, QUERY, ROWS, DIMS, OUT, R, I, P, QA, ACC] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
  const body = [
    ...vec([[4, I32], [1, V128]]),
    ...i32(0), ...set(R), ...get(DATA), ...set(P),
    BLOCK, VOID, LOOP, VOID,
    ...get(R), ...get(ROWS), GE_U, BR_IF, 1,
    ...zero, ...set(ACC), ...i32(0), ...set(I), ...get(QUERY), ...set(QA),
    BLOCK, VOID, LOOP, VOID,
    ...get(I), ...get(DIMS), GE_U, BR_IF, 1,
    ...get(ACC),
    ...get(P), ...load(0), ...extendLow, ...get(QA), ...load(0), ...dot, ...add,
    ...get(P), ...load(0), ...extendHigh, ...get(QA), ...load(16), ...dot, ...add,
    ...set(ACC),
    ...get(P), ...i32(16), ADD, ...set(P), ...get(QA), ...i32(32), ADD, ...set(QA), ...get(I), ...i32(16), ADD, ...set(I),
    BR, 0, END, END,
    ...get(OUT), ...get(R), ...i32(2), SHL, ADD,
    ...get(ACC), ...lane(0), ...get(ACC), ...lane(1), ADD, ...get(ACC), ...lane(2), ADD, ...get(ACC), ...lane(3), ADD,
    STORE, 2, 0,
    ...get(R), ...i32(1), ADD, ...set(R),
    BR, 0, END, END, END,
  ];
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0,
    ...section(1, vec([[0x60, ...vec([[I32], [I32], [I32], [I32], [I32]]), 0]])),
    ...section(2, vec([[...name("m"), ...name("mem"), 0x02, 0x00, 1]])),
    ...section(3, vec([[0]])),
    ...section(7, vec([[...name("dot"), 0x00, 0]])),
    ...section(10, vec([[...uleb(body.length), ...body]])),
  ]);
}

/** The part of the WebAssembly API used here (this project's TypeScript libs declare no WebAssembly globals). */
interface Wasm {
  validate(bytes: Uint8Array): boolean;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: Record<string, unknown> };
  Memory: new (descriptor: { initial: number }) => { buffer: ArrayBuffer };
}
const wasm = (globalThis as { WebAssembly?: Wasm }).WebAssembly;

let dotModule: object | null | undefined;

/** The compiled module, or null where WebAssembly SIMD is unavailable (then `int8Scores` scores). */
function simdModule(): object | null {
  if (dotModule === undefined) {
    const bytes = dotModuleBytes();
    dotModule = wasm && wasm.validate(bytes) ? new wasm.Module(bytes) : null;
  }
  return dotModule;
}

let simdOff = false;

/**
 * Turn the SIMD scorer off (true) or back on for matrices built from now on: the benchmark's comparison with plain JS
 * and the tests. Not a setting: the product always uses SIMD where it is available.
 */
export function setSimdOff(off: boolean): void {
  simdOff = off;
}

/** Whether matrices get a SIMD scorer: WebAssembly SIMD is there and `setSimdOff` has not turned it off. */
export const simdAvailable = (): boolean => !simdOff && simdModule() !== null;

/**
 * A SIMD scorer for a matrix of `rows` × `dims`, or null when SIMD is unavailable or `dims` does not suit it (not a
 * multiple of 16, or over `SIMD_MAX_DIMS`). Its memory holds the matrix, the query and the results:
 * rows × dims + 2 × dims + 4 × rows bytes (2.6 MB at 5,000 × 512), in place of the plain matrix's rows × dims.
 */
export function simdScorer(rows: number, dims: number): SimdScorer | null {
  if (dims === 0 || dims % 16 !== 0 || dims > SIMD_MAX_DIMS || !simdAvailable()) return null;
  const queryAt = rows * dims;
  const outAt = queryAt + 2 * dims; // a multiple of 4: dims is a multiple of 16
  const memory = new wasm!.Memory({ initial: Math.max(1, Math.ceil((outAt + 4 * rows) / 65_536)) });
  const { dot } = new wasm!.Instance(simdModule()!, { m: { mem: memory } }).exports as unknown as { dot: (data: number, query: number, rows: number, dims: number, out: number) => void };
  // The memory never grows, so these views stay valid.
  const data = new Int8Array(memory.buffer, 0, queryAt);
  const query = new Int16Array(memory.buffer, queryAt, dims);
  const sums = new Int32Array(memory.buffer, outAt, rows);
  return {
    data,
    scores(queryVector, scales) {
      if (queryVector.length !== dims) throw new Error(`query has ${queryVector.length} dimensions, matrix ${dims}`);
      let max = 0;
      for (let i = 0; i < dims; i++) max = Math.max(max, Math.abs(queryVector[i]!));
      const out = new Float32Array(rows);
      if (max === 0) return out;
      const k = QUERY_INT_MAX / max;
      for (let i = 0; i < dims; i++) query[i] = Math.round(queryVector[i]! * k);
      dot(0, queryAt, rows, dims, outAt);
      for (let r = 0; r < rows; r++) out[r] = (sums[r]! * scales[r]!) / k;
      return out;
    },
  };
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
 * The `want` best of `items` by `score` (descending; ties by `tie`, descending), sorted. Past twice `want` items it
 * first finds the `want`-th best score with a typed-array sort (no comparator calls), so only about `want` items go
 * through the comparator: 50,000 candidates cost a few milliseconds instead of a full comparator sort, 3,000 about a
 * third of one.
 */
function best(items: number[], score: (i: number) => number, tie: (i: number) => number, want: number): number[] {
  let pool = items;
  if (Number.isFinite(want) && items.length > 2 * want && want > 0) {
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
    const scores = matrixScores(m, queryVector);
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
