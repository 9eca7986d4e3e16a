import { describe, expect, it } from "vitest";
import { centroidOf, cohesion, mergeClusters, pruneMembers, seededRandom, sphericalKMeans } from "../../../core/ai/synthesis/cluster";
import { dot, normalize, toMatrix, type Matrix } from "../../../core/ai/vectors";

/** `groups` well-separated themes on the unit sphere, `per` noisy points each; labels say which theme. */
function blobs(groups: number, per: number, dims: number, noise: number, seed = 1) {
  const rand = seededRandom(seed);
  const gauss = () => Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
  const centres = Array.from({ length: groups }, () => normalize(Array.from({ length: dims }, gauss)));
  const rows: Float32Array[] = [];
  const labels: number[] = [];
  for (let g = 0; g < groups; g++) {
    for (let i = 0; i < per; i++) {
      rows.push(normalize(Array.from(centres[g], (c) => c + noise * gauss())));
      labels.push(g);
    }
  }
  return { x: toMatrix(rows), labels, centres };
}

/** Share of points whose cluster's majority label is their own label. */
function purity(assign: ArrayLike<number>, labels: number[]): number {
  const byCluster = new Map<number, Map<number, number>>();
  labels.forEach((l, i) => {
    const m = byCluster.get(assign[i]) ?? new Map<number, number>();
    m.set(l, (m.get(l) ?? 0) + 1);
    byCluster.set(assign[i], m);
  });
  let ok = 0;
  for (const m of byCluster.values()) ok += Math.max(...m.values());
  return ok / labels.length;
}

describe("sphericalKMeans", () => {
  it("recovers well-separated themes and returns unit centroids", () => {
    const { x, labels } = blobs(6, 80, 48, 0.08);
    const km = sphericalKMeans(x, 6, 42);
    expect(purity(km.assign, labels)).toBe(1);
    expect(new Set(km.assign).size).toBe(6);
    for (let j = 0; j < 6; j++) {
      const c = km.centroids.data.subarray(j * 48, (j + 1) * 48);
      expect(Math.sqrt(dot(c, c))).toBeCloseTo(1, 5);
    }
    for (let i = 0; i < x.rows; i++) expect(km.sim[i]).toBeGreaterThan(0.5);
  });

  it("is deterministic for a seed and prunes most similarity scans after the first pass", () => {
    const { x } = blobs(8, 100, 32, 0.3, 3);
    const a = sphericalKMeans(x, 12, 7);
    const b = sphericalKMeans(x, 12, 7);
    expect(Array.from(a.assign)).toEqual(Array.from(b.assign));
    expect(Array.from(a.centroids.data)).toEqual(Array.from(b.centroids.data));
    // Without bounds every pass computes every point–centroid similarity: n × k × iterations.
    expect(a.iterations).toBeGreaterThan(2);
    expect(a.scans).toBeLessThan(x.rows * 12 * a.iterations * 0.5);
  });

  it("handles tiny inputs: k clamped to n, one point", () => {
    const one: Matrix = toMatrix([normalize([1, 2, 3])]);
    const km = sphericalKMeans(one, 5, 1);
    expect(km.centroids.rows).toBe(1);
    expect(Array.from(km.assign)).toEqual([0]);
  });
});

describe("merge and prune", () => {
  it("merges clusters whose centroids are near-duplicates and keeps distinct ones apart", () => {
    const { x, labels } = blobs(3, 40, 24, 0.05, 9);
    // Split theme 0 in two halves: the halves are near-duplicates.
    const ids = (g: number) => labels.flatMap((l, i) => (l === g ? [i] : []));
    const half = ids(0).length / 2;
    const parts = [ids(0).slice(0, half), ids(0).slice(half), ids(1), ids(2)].map((m) => ({ members: m, centroid: centroidOf(x, m) }));
    const merged = mergeClusters(x, parts, 0.8);
    expect(merged).toHaveLength(3);
    expect(merged.map((c) => c.members.length).sort((a, b) => a - b)).toEqual([40, 40, 40]);
    expect(mergeClusters(x, parts, 0.9999)).toHaveLength(4);
  });

  it("drops members far from their centroid as noise", () => {
    const { x, labels } = blobs(2, 30, 16, 0.05, 5);
    const all = labels.map((_, i) => i);
    // One cluster holding both themes: every point is far from the mixed centroid.
    const mixed = [{ members: all, centroid: centroidOf(x, all) }];
    const strict = pruneMembers(x, mixed, 0.9);
    expect(strict.noise.length).toBe(60);
    expect(strict.clusters).toHaveLength(0);
    const pure = [0, 1].map((g) => {
      const m = all.filter((i) => labels[i] === g);
      return { members: m, centroid: centroidOf(x, m) };
    });
    const kept = pruneMembers(x, pure, 0.9);
    expect(kept.noise).toEqual([]);
    expect(cohesion(x, kept.clusters[0])).toBeGreaterThan(0.95);
  });
});
