/**
 * Synthesis at 10× (issue #24 point 5): the bounded parts that only large inputs reach, checked on small vectors so
 * the test stays fast. The figures themselves (50,000 mentions, wall time, peak RSS) are `npm run bench -- synthesis`.
 */
import { describe, expect, it } from "vitest";
import {
  KMEANS_FIT_ABOVE,
  KMEANS_FIT_SAMPLE,
  KMEANS_FULL_PASSES,
  passageOrdinals,
  seededRandom,
  sphericalKMeans,
  themeSupport,
  voiceTotals,
  type MentionRef,
} from "../../../core/ai/synthesis/cluster";
import type { Matrix } from "../../../core/ai/vectors";

/** `groups` themes on the unit sphere of `dims` dimensions, `n` points in all (round robin), Gaussian noise. */
function blobs(groups: number, n: number, dims: number, noise: number, seed = 1): { x: Matrix; labels: Int32Array } {
  const rand = seededRandom(seed);
  const gauss = () => Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
  const unit = (v: Float32Array) => {
    let s = 0;
    for (const t of v) s += t * t;
    const r = Math.sqrt(s);
    return v.map((t) => t / r);
  };
  const centres = Array.from({ length: groups }, () => unit(Float32Array.from({ length: dims }, gauss)));
  const data = new Float32Array(n * dims);
  const labels = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const g = i % groups;
    labels[i] = g;
    data.set(unit(centres[g].map((c) => c + noise * gauss())), i * dims);
  }
  return { x: { data, rows: n, dims }, labels };
}

function purity(assign: Int32Array, labels: Int32Array): number {
  const counts = new Map<number, Map<number, number>>();
  labels.forEach((l, i) => {
    const m = counts.get(assign[i]) ?? new Map<number, number>();
    m.set(l, (m.get(l) ?? 0) + 1);
    counts.set(assign[i], m);
  });
  let ok = 0;
  for (const m of counts.values()) ok += Math.max(...m.values());
  return ok / labels.length;
}

describe("k-means above KMEANS_FIT_ABOVE rows: fitted on a sample, refined on every row", () => {
  const n = KMEANS_FIT_ABOVE + 5_000;
  // Over-clustering, as synthesis does (k = 1.5·√(n/2) and merging after): 12 themes, 24 centroids.
  const k = 24;
  const { x, labels } = blobs(12, n, 32, 0.1, 5);

  it("recovers the themes of every row, deterministically", () => {
    const a = sphericalKMeans(x, k, 42);
    expect(a.assign.length).toBe(n);
    expect(purity(a.assign, labels)).toBeGreaterThan(0.99);
    const b = sphericalKMeans(x, k, 42);
    expect(Array.from(a.assign)).toEqual(Array.from(b.assign));
    expect(Array.from(a.centroids.data)).toEqual(Array.from(b.centroids.data));
  });

  it("computes at most the sample's passes plus KMEANS_FULL_PASSES passes over every row", () => {
    const km = sphericalKMeans(x, k, 42);
    const sample = sphericalKMeans({ ...x, data: x.data.subarray(0, KMEANS_FIT_SAMPLE * x.dims), rows: KMEANS_FIT_SAMPLE }, k, 42);
    // The refinement's first pass compares every row with every centroid; bounds prune the passes after it.
    expect(km.scans).toBeLessThanOrEqual(sample.scans * 2 + n * k * KMEANS_FULL_PASSES);
    expect(km.iterations).toBeLessThanOrEqual(sample.iterations * 2 + KMEANS_FULL_PASSES);
    // At most one pass's worth of similarities after the full first pass: the sample's centroids needed little change.
    expect(km.scans - n * k).toBeLessThan(sample.scans + n * k);
  });
});

describe("themeSupport with voice totals computed once", () => {
  it("gives the same support as scanning every mention", () => {
    const refs: MentionRef[] = [];
    for (let i = 0; i < 300; i++) refs.push({ source: `s${i % 3}`, unit: i, voice: `s${i % 3}\u0000p${i % 7}`, turn: i % 3 === 0, emphatic: i % 11 === 0 });
    const ordinals = passageOrdinals(refs);
    const totals = voiceTotals(refs);
    for (const members of [[0, 3, 6, 9, 21], [1, 8, 15, 22, 29, 36], [2, 5, 7, 100, 200, 299]]) {
      expect(themeSupport(refs, members, ordinals, totals)).toEqual(themeSupport(refs, members, ordinals));
    }
    const main = themeSupport(refs, [0, 21, 42], ordinals, totals);
    expect(main.voiceTotal).toBe(refs.filter((r) => r.voice === main.mainVoice).length);
    expect(main.notes).toBe(false);
  });
});
