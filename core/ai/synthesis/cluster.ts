/**
 * Step 3 of synthesis: cluster unit-length mention vectors by cosine similarity.
 *
 * Algorithm: spherical k-means (k-means on the unit sphere: assign by highest dot product, centroid = normalised
 * mean) seeded with greedy k-means++ from a seeded PRNG (pure-rand xoroshiro128+), so results are reproducible.
 * Assignment uses bounds (Elkan's idea, in similarity form): when a centroid moves by δ (Euclidean), a unit
 * vector's similarity to it moves by at most δ, so per point we keep a lower bound of the similarity to its own
 * centroid and an upper bound per other centroid, and compute a similarity exactly only when the bounds overlap.
 * After the first pass most similarities are skipped. Seeding uses a sample of at most max(2,000, 20·k) rows.
 *
 * Then `mergeClusters` joins clusters whose centroids are near-duplicates (average-linkage agglomeration of the
 * centroids above a cosine threshold), and `pruneMembers` drops members far from their centroid (noise).
 *
 * Why not HDBSCAN/agglomerative on all points: O(n²) similarities for 10k mentions is 10^8 dot products of 512-d
 * vectors (~1 min in JS). k-means is O(n·k·d) per pass and over-clustering followed by centroid merging recovers
 * themes of uneven size, which is what k-means alone handles badly.
 */
import { uniformFloat64 } from "pure-rand/distribution/uniformFloat64";
import { xoroshiro128plus } from "pure-rand/generator/xoroshiro128plus";
import { rowDot, type Matrix } from "../vectors";

export interface KMeansResult {
  /** Cluster index per row. */
  assign: Int32Array;
  /** Similarity of each row to its centroid. */
  sim: Float32Array;
  /** k unit-length centroids, row-major. */
  centroids: Matrix;
  iterations: number;
  /** Exact point–centroid similarities computed in the Lloyd passes, for diagnostics (n·k per pass without bounds). */
  scans: number;
}

/** A deterministic uniform [0, 1) generator from a seed. */
export function seededRandom(seed: number): () => number {
  const rng = xoroshiro128plus(seed | 0);
  return () => uniformFloat64(rng);
}

/** Dot product of a[ao..ao+d) and b[bo..bo+d), 4-way unrolled, no allocation (the hot loop of clustering). */
export function dotAt(a: Float32Array, ao: number, b: Float32Array, bo: number, d: number): number {
  let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  let t = 0;
  for (; t + 3 < d; t += 4) {
    s0 += a[ao + t] * b[bo + t];
    s1 += a[ao + t + 1] * b[bo + t + 1];
    s2 += a[ao + t + 2] * b[bo + t + 2];
    s3 += a[ao + t + 3] * b[bo + t + 3];
  }
  for (; t < d; t++) s0 += a[ao + t] * b[bo + t];
  return s0 + s1 + s2 + s3;
}

function normalizeRows(c: Float32Array, k: number, d: number) {
  for (let j = 0; j < k; j++) {
    let s = 0;
    for (let t = 0; t < d; t++) s += c[j * d + t] * c[j * d + t];
    const n = Math.sqrt(s);
    if (n > 0) for (let t = 0; t < d; t++) c[j * d + t] /= n;
  }
}

/**
 * Greedy k-means++ seeding on the unit sphere (as in scikit-learn): each step draws `trials` candidates with
 * probability proportional to their squared distance (2 - 2·cos) to the nearest seed so far, and keeps the one
 * that lowers the total squared distance most. More robust than plain k-means++ (trials = 1) against two seeds
 * landing in one theme; costs trials × k × n dot products.
 */
function seedCentroids(x: Matrix, k: number, rand: () => number, trials: number): Float32Array {
  const { rows: n, dims: d } = x;
  const c = new Float32Array(k * d);
  let best: Float64Array = new Float64Array(n).fill(-1);
  const dist = (s: number) => Math.max(0, 2 - 2 * s);
  const place = (j: number, i: number) => c.set(x.data.subarray(i * d, (i + 1) * d), j * d);
  const first = Math.floor(rand() * n);
  place(0, first);
  let total = 0;
  for (let i = 0; i < n; i++) {
    best[i] = dotAt(x.data, i * d, c, 0, d);
    total += dist(best[i]);
  }
  const cand = new Float64Array(n);
  for (let j = 1; j < k; j++) {
    let chosen = -1;
    let chosenTotal = Infinity;
    let chosenBest: Float64Array | null = null as Float64Array | null;
    for (let t = 0; t < trials; t++) {
      let pick = Math.floor(rand() * n);
      if (total > 0) {
        let r = rand() * total;
        pick = n - 1;
        for (let i = 0; i < n; i++) {
          r -= dist(best[i]);
          if (r <= 0) {
            pick = i;
            break;
          }
        }
      }
      const po = pick * d;
      let tot = 0;
      for (let i = 0; i < n; i++) {
        const s = dotAt(x.data, i * d, x.data, po, d);
        cand[i] = s > best[i] ? s : best[i];
        tot += dist(cand[i]);
      }
      if (tot < chosenTotal) {
        chosenTotal = tot;
        chosen = pick;
        chosenBest = Float64Array.from(cand);
      }
    }
    place(j, chosen);
    best = chosenBest!;
    total = chosenTotal;
  }
  return c;
}

/**
 * Spherical k-means with k-means++ seeding and bound-based pruning.
 * @param x unit-length rows (n × d)
 * @param k clusters wanted (clamped to [1, n])
 * @param seed PRNG seed; same input and seed give the same result
 * @param maxIter Lloyd passes at most (default 30); stops earlier when fewer than 0.1% of points move
 * @param trials candidates per greedy k-means++ step (default 2 + ln k)
 */
export function sphericalKMeans(x: Matrix, k: number, seed: number, maxIter = 30, trials?: number): KMeansResult {
  const { rows: n, dims: d } = x;
  k = Math.max(1, Math.min(k, n));
  const rand = seededRandom(seed);
  const xd = x.data;
  // Seed on a sample of at most max(2,000, 20·k) rows: seeding cost no longer grows with n.
  const sampleSize = Math.min(n, Math.max(2000, 20 * k));
  let seedRows: Matrix = x;
  if (sampleSize < n) {
    const idx = Array.from({ length: n }, (_, i) => i);
    for (let i = 0; i < sampleSize; i++) {
      const j = i + Math.floor(rand() * (n - i));
      [idx[i], idx[j]] = [idx[j], idx[i]];
    }
    const data = new Float32Array(sampleSize * d);
    for (let i = 0; i < sampleSize; i++) data.set(xd.subarray(idx[i] * d, (idx[i] + 1) * d), i * d);
    seedRows = { data, rows: sampleSize, dims: d };
  }
  const c = n > 0 ? seedCentroids(seedRows, k, rand, trials ?? 2 + Math.floor(Math.log(k))) : new Float32Array(0);
  const assign = new Int32Array(n).fill(-1);
  // Elkan-style bounds in similarity form: lb[i] ≤ sim(x_i, own centroid), ub[i·k+j] ≥ sim(x_i, c_j).
  // When c_j moves by δ_j (Euclidean), |Δ sim(x, c_j)| ≤ δ_j for unit x, so the bounds stay valid after
  // lb -= δ_own and ub[j] += δ_j; a centroid j is only compared exactly when ub[j] > lb.
  const lb = new Float32Array(n);
  const ub = new Float32Array(n * k);
  const move = new Float64Array(k);
  let scans = 0;
  let iterations = 0;

  const sums = new Float64Array(k * d);
  const counts = new Int32Array(k);
  for (let it = 0; it < maxIter; it++) {
    iterations++;
    let changed = 0;
    for (let i = 0; i < n; i++) {
      const off = i * d;
      const uo = i * k;
      let a = assign[i];
      if (a < 0) {
        // First pass: exact similarity to every centroid.
        let b = -Infinity;
        for (let j = 0; j < k; j++) {
          const sv = dotAt(xd, off, c, j * d, d);
          ub[uo + j] = sv;
          if (sv > b) {
            b = sv;
            a = j;
          }
        }
        scans += k;
        assign[i] = a;
        lb[i] = b;
        changed++;
        continue;
      }
      lb[i] -= move[a];
      let tight = false;
      for (let j = 0; j < k; j++) {
        if (j === a) continue;
        ub[uo + j] += move[j];
        if (ub[uo + j] <= lb[i]) continue;
        if (!tight) {
          lb[i] = dotAt(xd, off, c, a * d, d);
          ub[uo + a] = lb[i];
          scans++;
          tight = true;
          if (ub[uo + j] <= lb[i]) continue;
        }
        const sv = dotAt(xd, off, c, j * d, d);
        scans++;
        ub[uo + j] = sv;
        if (sv > lb[i]) {
          ub[uo + a] = lb[i];
          a = j;
          lb[i] = sv;
        }
      }
      if (a !== assign[i]) {
        assign[i] = a;
        changed++;
      }
    }
    if (it > 0 && changed <= n * 0.001) break;
    // Recompute centroids as normalised means.
    sums.fill(0);
    counts.fill(0);
    for (let i = 0; i < n; i++) {
      const a = assign[i];
      counts[a]++;
      const off = i * d;
      const co = a * d;
      for (let t = 0; t < d; t++) sums[co + t] += xd[off + t];
    }
    const old = c.slice();
    for (let j = 0; j < k; j++) {
      if (counts[j] === 0) {
        // Empty cluster: reseed with the point least similar to its own centroid (deterministic).
        let worst = -1;
        let worstSim = Infinity;
        for (let i = 0; i < n; i++) {
          if (counts[assign[i]] > 1 && lb[i] < worstSim) {
            worstSim = lb[i];
            worst = i;
          }
        }
        if (worst >= 0) {
          counts[assign[worst]]--;
          c.set(xd.subarray(worst * d, (worst + 1) * d), j * d);
          assign[worst] = j;
          counts[j] = 1;
          lb[worst] = 1;
          continue;
        }
      }
      for (let t = 0; t < d; t++) c[j * d + t] = sums[j * d + t];
    }
    normalizeRows(c, k, d);
    for (let j = 0; j < k; j++) {
      let sq = 0;
      for (let t = 0; t < d; t++) {
        const diff = c[j * d + t] - old[j * d + t];
        sq += diff * diff;
      }
      move[j] = Math.sqrt(sq);
    }
  }
  // Exact similarity of each point to its final centroid.
  const sim = new Float32Array(n);
  for (let i = 0; i < n; i++) sim[i] = dotAt(xd, i * d, c, assign[i] * d, d);
  return { assign, sim, centroids: { data: c, rows: k, dims: d }, iterations, scans };
}

/**
 * Remove the common direction of the embedding space: subtract the mean row, renormalise each row.
 * Sentence embeddings are anisotropic (every mention of one product shares a large common component), which makes
 * all cluster centroids look alike; centring restores contrast between themes. Rows equal to the mean stay zero.
 */
export function centered(x: Matrix): Matrix {
  const { rows: n, dims: d } = x;
  const mean = new Float64Array(d);
  for (let i = 0; i < n; i++) for (let t = 0; t < d; t++) mean[t] += x.data[i * d + t];
  for (let t = 0; t < d; t++) mean[t] /= Math.max(1, n);
  const data = new Float32Array(n * d);
  for (let i = 0; i < n; i++) {
    let s = 0;
    for (let t = 0; t < d; t++) {
      const v = x.data[i * d + t] - mean[t];
      data[i * d + t] = v;
      s += v * v;
    }
    const norm = Math.sqrt(s);
    if (norm > 0) for (let t = 0; t < d; t++) data[i * d + t] /= norm;
  }
  return { data, rows: n, dims: d };
}

/** A cluster as a list of member row indices and its unit-length centroid. */
export interface Cluster {
  members: number[];
  centroid: Float32Array;
}

/** Normalised mean of the given rows. */
export function centroidOf(x: Matrix, members: number[]): Float32Array {
  const d = x.dims;
  const c = new Float32Array(d);
  for (const i of members) for (let t = 0; t < d; t++) c[t] += x.data[i * d + t];
  let s = 0;
  for (let t = 0; t < d; t++) s += c[t] * c[t];
  const n = Math.sqrt(s);
  if (n > 0) for (let t = 0; t < d; t++) c[t] /= n;
  return c;
}

function dotVec(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let t = 0; t < a.length; t++) s += a[t] * b[t];
  return s;
}

/**
 * Merge clusters whose centroids have cosine similarity ≥ `threshold`, most similar pair first, recomputing the
 * merged centroid from its members each time (so it ends as average linkage over centroids). O(k³), k ≤ a few hundred.
 */
export function mergeClusters(x: Matrix, clusters: Cluster[], threshold: number): Cluster[] {
  const live = clusters.map((c) => ({ members: [...c.members], centroid: c.centroid }));
  for (;;) {
    let bi = -1;
    let bj = -1;
    let best = threshold;
    for (let i = 0; i < live.length; i++) {
      for (let j = i + 1; j < live.length; j++) {
        const s = dotVec(live[i].centroid, live[j].centroid);
        if (s >= best) {
          best = s;
          bi = i;
          bj = j;
        }
      }
    }
    if (bi < 0) return live;
    const members = [...live[bi].members, ...live[bj].members].sort((a, b) => a - b);
    live[bi] = { members, centroid: centroidOf(x, members) };
    live.splice(bj, 1);
  }
}

/**
 * Drop members whose similarity to their centroid is below `minSim`, then recompute the centroid.
 * Returns the pruned clusters and the rows dropped as noise.
 */
export function pruneMembers(x: Matrix, clusters: Cluster[], minSim: number): { clusters: Cluster[]; noise: number[] } {
  const noise: number[] = [];
  const out: Cluster[] = [];
  for (const c of clusters) {
    const keep: number[] = [];
    for (const i of c.members) {
      if (rowDot(x, i, c.centroid) >= minSim) keep.push(i);
      else noise.push(i);
    }
    if (keep.length) out.push({ members: keep, centroid: centroidOf(x, keep) });
  }
  return { clusters: out, noise: noise.sort((a, b) => a - b) };
}

/** Mean similarity of members to the centroid (cluster tightness, 0..1). */
export function cohesion(x: Matrix, c: Cluster): number {
  if (!c.members.length) return 0;
  let s = 0;
  for (const i of c.members) s += rowDot(x, i, c.centroid);
  return s / c.members.length;
}
