import { diffArrays } from "diff";
import { fitText, wireBytes } from "../response-size";

/**
 * Line-level revision statistics for spec 01 `GET /api/documents/{id}/diff` (`diff_stats: {additions, deletions,
 * changes}`), computed with the `diff` package (Myers' algorithm, `diffArrays` over interned line ids — the same
 * tokens `diffLines` would compare).
 *
 * ## Definition of `changes`
 *
 * The diff is a sequence of unchanged lines and "hunks" — maximal runs of removed and added lines between two unchanged
 * lines. In a hunk with `r` removed and `a` added lines, `min(r, a)` lines were *changed* (rewritten in place), and the
 * remainder are pure deletions (`r − min`) or pure additions (`a − min`). So:
 *
 * - `changes` = Σ min(r, a) over hunks
 * - `additions` = Σ (a − min(r, a)), `deletions` = Σ (r − min(r, a))
 * - lines added in total = additions + changes; lines removed in total = deletions + changes.
 *
 * Example: one edited line → `{0, 0, 1}`; one new paragraph line → `{1, 0, 0}`; a 3-line section replaced by 5 lines →
 * `{2, 0, 3}`. Lines are compared exactly (whitespace counts), after normalising CRLF/CR to LF; a missing final
 * newline is not a change.
 *
 * ## Speed
 *
 * Two standard speed-ups keep two 5,000-line revisions in milliseconds: patience anchoring (lines unique in both
 * revisions, kept in order, split the work into small stretches — as in git's patience diff) and, inside each
 * stretch, setting aside lines that occur on one side only (they can never be unchanged; the "discard confusing lines"
 * step of GNU diff) before Myers runs. The hunks are counted on the original line numbers. If Myers still exceeds
 * `timeoutMs` (pathological reorderings of repeated lines), the stats fall back to one hunk between the common prefix and suffix in which lines present
 * on both sides count as unchanged (a multiset match). That is exact for edits in one place and an approximation
 * otherwise: moved lines count as unchanged, so it can under-count.
 */
export interface DiffStats {
  /** Lines added that do not replace a removed line. */
  additions: number;
  /** Lines removed that were not replaced by an added line. */
  deletions: number;
  /** Lines rewritten: per hunk, min(removed, added). */
  changes: number;
}

/** Splits text into lines; "" has no lines and a final newline does not make an extra empty line. */
export function splitLines(text: string): string[] {
  if (!text) return [];
  const t = text.replace(/\r\n?/g, "\n");
  const lines = t.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  return lines;
}

function countHunks(fromLen: number, toLen: number, matched: Array<[number, number]>): DiffStats {
  const s: DiffStats = { additions: 0, deletions: 0, changes: 0 };
  let i = 0;
  let j = 0;
  const hunk = (r: number, a: number) => {
    const m = Math.min(r, a);
    s.changes += m;
    s.deletions += r - m;
    s.additions += a - m;
  };
  for (const [mi, mj] of matched) {
    hunk(mi - i, mj - j);
    i = mi + 1;
    j = mj + 1;
  }
  hunk(fromLen - i, toLen - j);
  return s;
}

/**
 * Line-level diff statistics between two revisions' contents.
 *
 * @param fromText older content (Markdown or any text)
 * @param toText newer content
 * @param opts.timeoutMs total budget for the Myers diffs before the fallback (default 500 ms)
 * @returns `{ additions, deletions, changes }`, all ≥ 0 (see the module comment for the definition)
 */
export function diffStats(fromText: string, toText: string, opts: { timeoutMs?: number } = {}): DiffStats {
  const a = splitLines(fromText);
  const b = splitLines(toText);
  // Intern lines to integers.
  const ids = new Map<string, number>();
  const intern = (l: string) => {
    let id = ids.get(l);
    if (id === undefined) ids.set(l, (id = ids.size));
    return id;
  };
  const ai = a.map(intern);
  const bi = b.map(intern);
  const matched = matchLines(ai, bi, performance.now() + (opts.timeoutMs ?? 500));
  return matched ? countHunks(a.length, b.length, matched) : fallbackStats(ai, bi);
}

/**
 * Unchanged line pairs `[i, j]` (increasing in both), or undefined when the time budget ran out.
 *
 * Patience anchoring: lines that occur exactly once in each revision and keep their relative order (the longest
 * increasing subsequence of their positions) are matched first; Myers (`diffArrays`) then aligns each stretch between
 * two anchors, after setting aside lines that occur on one side only. For typical edits this is the same alignment as
 * a whole-file Myers diff, at a fraction of the cost on large, heavily edited or reordered documents.
 */
function matchLines(a: number[], b: number[], deadline: number): Array<[number, number]> | undefined {
  const count = (xs: number[]) => {
    const m = new Map<number, number>();
    for (const x of xs) m.set(x, (m.get(x) ?? 0) + 1);
    return m;
  };
  const ca = count(a);
  const cb = count(b);
  const posB = new Map<number, number>();
  b.forEach((x, j) => cb.get(x) === 1 && posB.set(x, j));
  const cand: Array<[number, number]> = [];
  a.forEach((x, i) => {
    if (ca.get(x) === 1 && cb.get(x) === 1) cand.push([i, posB.get(x)!]);
  });
  const anchors = longestIncreasing(cand);
  const out: Array<[number, number]> = [];
  let i0 = 0;
  let j0 = 0;
  for (const [ai, bj] of [...anchors, [a.length, b.length] as [number, number]]) {
    const seg = myersMatches(a, b, i0, ai, j0, bj, deadline);
    if (!seg) return undefined;
    out.push(...seg);
    if (ai < a.length) out.push([ai, bj]);
    i0 = ai + 1;
    j0 = bj + 1;
  }
  return out;
}

/** Longest subsequence of pairs (sorted by i) whose j increases (patience sorting, O(n log n)). */
function longestIncreasing(pairs: Array<[number, number]>): Array<[number, number]> {
  const tails: number[] = [];
  const prev: number[] = new Array(pairs.length);
  for (let k = 0; k < pairs.length; k++) {
    const j = pairs[k][1];
    let lo = 0;
    let hi = tails.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (pairs[tails[mid]][1] < j) lo = mid + 1;
      else hi = mid;
    }
    prev[k] = lo > 0 ? tails[lo - 1] : -1;
    tails[lo] = k;
  }
  const out: Array<[number, number]> = [];
  for (let k = tails.length ? tails[tails.length - 1] : -1; k >= 0; k = prev[k]) out.push(pairs[k]);
  return out.reverse();
}

/** Myers matches of a[i0..i1) against b[j0..j1), with one-sided lines set aside first; undefined on timeout. */
function myersMatches(a: number[], b: number[], i0: number, i1: number, j0: number, j1: number, deadline: number): Array<[number, number]> | undefined {
  if (i0 >= i1 || j0 >= j1) return [];
  const inA = new Set<number>();
  const inB = new Set<number>();
  for (let i = i0; i < i1; i++) inA.add(a[i]);
  for (let j = j0; j < j1; j++) inB.add(b[j]);
  const aKeep: number[] = [];
  const bKeep: number[] = [];
  for (let i = i0; i < i1; i++) if (inB.has(a[i])) aKeep.push(i);
  for (let j = j0; j < j1; j++) if (inA.has(b[j])) bKeep.push(j);
  if (!aKeep.length || !bKeep.length) return [];
  const budget = deadline - performance.now();
  if (budget <= 0) return undefined;
  const changes = diffArrays(
    aKeep.map((k) => a[k]),
    bKeep.map((k) => b[k]),
    { timeout: Math.max(1, Math.floor(budget)) },
  );
  if (!changes) return undefined;
  const matched: Array<[number, number]> = [];
  let x = 0;
  let y = 0;
  for (const c of changes) {
    const n = c.count ?? c.value.length;
    if (c.added) y += n;
    else if (c.removed) x += n;
    else {
      for (let k = 0; k < n; k++) matched.push([aKeep[x + k], bKeep[y + k]]);
      x += n;
      y += n;
    }
  }
  return matched;
}

/** Fallback: common prefix/suffix are unchanged; the middle is one hunk, with lines present on both sides matched. */
function fallbackStats(a: number[], b: number[]): DiffStats {
  let p = 0;
  while (p < a.length && p < b.length && a[p] === b[p]) p++;
  let q = 0;
  while (q < a.length - p && q < b.length - p && a[a.length - 1 - q] === b[b.length - 1 - q]) q++;
  const mid = new Map<number, number>();
  for (let k = p; k < a.length - q; k++) mid.set(a[k], (mid.get(a[k]) ?? 0) + 1);
  let common = 0;
  for (let k = p; k < b.length - q; k++) {
    const n = mid.get(b[k]) ?? 0;
    if (n > 0) {
      common++;
      mid.set(b[k], n - 1);
    }
  }
  const r = a.length - p - q - common;
  const ad = b.length - p - q - common;
  const m = Math.min(r, ad);
  return { additions: ad - m, deletions: r - m, changes: m };
}

/**
 * What the diff answer's two texts may take together, bytes as the Lambda answer carries them: under the 6 MB a Lambda
 * may answer (API Gateway's proxy integration refuses more, a 500 outside the envelope), with room for the other
 * fields. Two revisions of 1,000,000 characters may weigh 3 MB each (three-byte characters), more with escapes: the
 * answer's JSON body is itself a JSON string in the proxy result, so a `"` of the text takes four bytes there.
 */
export const DIFF_TEXT_RESPONSE_BYTES = 5_000_000;

/**
 * The diff answer's two texts cut to `maxBytes` together (bytes as the Lambda answer carries them, core/response-size.ts
 * `wireBytes`), each keeping its beginning: the lighter text is fitted first to at most half, the other takes the
 * rest, so a short text is never cut for a long one.
 * @returns both texts and whether either was cut
 */
export function fitDiffTexts(fromText: string, toText: string, maxBytes = DIFF_TEXT_RESPONSE_BYTES) {
  const fromFirst = wireBytes(fromText) <= wireBytes(toText);
  const first = fitText(fromFirst ? fromText : toText, Math.floor(maxBytes / 2));
  const second = fitText(fromFirst ? toText : fromText, maxBytes - wireBytes(first.text));
  const [from, to] = fromFirst ? [first, second] : [second, first];
  return { from: from.text, to: to.text, truncated: from.cut || to.cut };
}
