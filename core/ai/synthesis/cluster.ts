/**
 * Step 3 of synthesis: cluster unit-length mention vectors by cosine similarity.
 *
 * Algorithm: spherical k-means (k-means on the unit sphere: assign by highest dot product, centroid = normalised
 * mean) seeded with greedy k-means++ from a seeded PRNG (pure-rand xoroshiro128+), so results are reproducible.
 * Assignment uses bounds (Elkan's idea, in similarity form): when a centroid moves by δ (Euclidean), a unit
 * vector's similarity to it moves by at most δ, so per point we keep a lower bound of the similarity to its own
 * centroid and an upper bound per other centroid, and compute a similarity exactly only when the bounds overlap.
 * After the first pass most similarities are skipped. Seeding uses a sample of at most max(2,000, 20·k) rows.
 * Above `KMEANS_FIT_ABOVE` rows (20,000) the centroids are fitted on a 10,000-row sample and then refined by at
 * most `KMEANS_FULL_PASSES` passes over every row, so a 10× workspace costs a few passes more, not thirty.
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
import { FILLERS } from "./mentions";
import { signInAt, type Token } from "./nlp";

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
  if (n > KMEANS_FIT_ABOVE && k < KMEANS_FIT_SAMPLE) {
    // Large input: fit on a seeded sample, then refine on every row from those centroids (see KMEANS_FIT_ABOVE).
    const rand = seededRandom(seed);
    const fit = sphericalKMeans(sampleRows(x, KMEANS_FIT_SAMPLE, rand), k, seed, maxIter, trials);
    const refined = lloyd(x, fit.centroids.data.slice(), k, Math.min(maxIter, KMEANS_FULL_PASSES));
    return { ...refined, iterations: fit.iterations + refined.iterations, scans: fit.scans + refined.scans };
  }
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
  return lloyd(x, c, k, maxIter);
}

/**
 * Inputs above this many rows are clustered by `sphericalKMeans` in two steps: the full algorithm on a seeded
 * sample of `KMEANS_FIT_SAMPLE` rows, then at most `KMEANS_FULL_PASSES` Lloyd passes over every row from the
 * sample's centroids. Almost all of k-means' cost is in its first passes, while the centroids travel (issue #24: at
 * 49,000 mentions and k = 150, 30 passes and 28 million point–centroid similarities, 20 s of CPU); a 10,000-row
 * sample gives centroids that the full passes only adjust, so the cost grows with n by a few passes, not thirty.
 * Inputs up to this size (every workspace measured so far: the jupyter folder has 8,800 mentions, the largest
 * survey question a few thousand answers) are clustered exactly as before.
 */
export const KMEANS_FIT_ABOVE = 20_000;
/** Rows of the sample the centroids are fitted on above `KMEANS_FIT_ABOVE` (≥ 66 rows per centroid at k = 150). */
export const KMEANS_FIT_SAMPLE = 10_000;
/** Lloyd passes over every row after the sample fit (bounds make the later ones cheap). */
export const KMEANS_FULL_PASSES = 6;

/** A seeded sample of `size` distinct rows (partial Fisher–Yates), in a new matrix. */
function sampleRows(x: Matrix, size: number, rand: () => number): Matrix {
  const { rows: n, dims: d } = x;
  const idx = Array.from({ length: n }, (_, i) => i);
  for (let i = 0; i < size; i++) {
    const j = i + Math.floor(rand() * (n - i));
    [idx[i], idx[j]] = [idx[j], idx[i]];
  }
  const data = new Float32Array(size * d);
  for (let i = 0; i < size; i++) data.set(x.data.subarray(idx[i] * d, (idx[i] + 1) * d), i * d);
  return { data, rows: size, dims: d };
}

/** Lloyd passes of spherical k-means from the centroids `c` (k × d, unit rows; updated in place), with bounds. */
function lloyd(x: Matrix, c: Float32Array, k: number, maxIter: number): KMeansResult {
  const { rows: n, dims: d } = x;
  const xd = x.data;
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

/** Where a mention comes from, for counting a theme's support: its source, its unit and whose words it is. */
export interface MentionRef {
  source: string;
  /** Index of the unit in its source. */
  unit: number;
  /** Source id + speaker; a source's unattributed mentions are one voice (one participant's notes, one document). */
  voice: string;
  /** A transcript turn: consecutive turns of one speaker are one passage (see `passageOrdinals`). */
  turn?: boolean;
  /** Said with emphasis ("I hate…", "every time", "really", "!"; notes.ts `isEmphatic`). */
  emphatic?: boolean;
}

/** A theme's support: distinct units, distinct voices, and how often its main voice came back to it. */
export interface Support {
  units: number;
  voices: number;
  /** The voice with the most units in the theme. */
  mainVoice: string;
  /** Separate passages of that voice (see `passageOrdinals`). */
  passages: number;
  /** Passages of that voice that dwell on the theme (2+ of its mentions) or say it with emphasis. */
  emphasised: number;
  /** Mentions of that voice in the theme. */
  mentions: number;
  /** Mentions of that voice in the whole input, and whether they are notes (paragraphs, bullets) rather than turns. */
  voiceTotal: number;
  notes: boolean;
}

/**
 * A voice needs this much passage weight for a theme of its own: a passage counts 1, or 2 when emphasised (the
 * participant dwells on the theme there, in 2+ of its mentions, or says it with emphasis). Once is a remark; three
 * separate passages, or two with one emphasised, are a point the participant keeps coming back to or insists on.
 */
export const MIN_PASSAGES = 3;
/**
 * One-voice themes are allowed only when the input holds at most this many people (`participantCount`) (one to three interviews, a note and a transcript). With more, a theme must be raised by two people:
 * cross-participant themes are the stronger evidence, and one talkative participant would otherwise fill the list.
 */
export const FEW_VOICES = 3;
/**
 * A voice with fewer mentions than this, all in notes (one short interview note: 19–26 answers), needs a passage
 * weight of `SHORT_NOTE_PASSAGES` and two mentions, not `MIN_PASSAGES` and `minUnits`: two answers to different
 * questions, or one answer the note-taker wrote down in two or more sentences on the subject. A note-taker condenses
 * each answer to what mattered, so a point written twice is one the participant came back to or dwelt on; in a
 * transcript, where everything said is recorded, or in long notes, it stays a remark.
 */
export const SHORT_NOTE_MENTIONS = 40;
/** Passage weight a short note's voice needs for a theme (see `SHORT_NOTE_MENTIONS`). */
export const SHORT_NOTE_PASSAGES = 2;

/**
 * Position of each unit among its voice's units that have mentions (key `source:unit`), such that two units are
 * separate passages when their positions are at least 2 apart. In a transcript, consecutive turns of a speaker
 * are one passage (an interviewer's "mhm" or "okay?" splits one answer into several turns): turns are separate
 * passages only when the speaker said something else in between. Paragraphs and bullets of notes are each a
 * passage of their own (each answers its own question), so their positions step by 2.
 */
export function passageOrdinals(refs: MentionRef[]): Map<string, number> {
  const byVoice = new Map<string, { source: string; units: Set<number>; turns: boolean }>();
  for (const r of refs) {
    const k = `${r.voice}\u0000${r.source}`;
    const v = byVoice.get(k) ?? { source: r.source, units: new Set<number>(), turns: true };
    v.units.add(r.unit);
    if (!r.turn) v.turns = false;
    byVoice.set(k, v);
  }
  const out = new Map<string, number>();
  for (const { source, units, turns } of byVoice.values()) {
    [...units].sort((a, b) => a - b).forEach((u, i) => out.set(`${source}:${u}`, turns ? i : 2 * i));
  }
  return out;
}

/** Per voice: its mentions in the whole input, and whether all of them are notes (not transcript turns). */
export type VoiceTotals = Map<string, { total: number; notes: boolean }>;

/** `VoiceTotals` of an input, computed once so that `themeSupport` does not scan every mention per theme. */
export function voiceTotals(refs: MentionRef[]): VoiceTotals {
  const out: VoiceTotals = new Map();
  for (const r of refs) {
    const v = out.get(r.voice) ?? { total: 0, notes: true };
    v.total++;
    if (r.turn) v.notes = false;
    out.set(r.voice, v);
  }
  return out;
}

/**
 * Support of a theme whose members are `members` (indices into `refs`).
 * @param ordinals from `passageOrdinals` over all the input's mentions
 * @param totals from `voiceTotals(refs)`; without it every mention is scanned (O(n) per theme)
 */
export function themeSupport(refs: MentionRef[], members: number[], ordinals: Map<string, number>, totals?: VoiceTotals): Support {
  const unitsByVoice = new Map<string, Set<string>>();
  const units = new Set<string>();
  // Per unit: mentions of the theme in it, and whether one is emphatic.
  const inUnit = new Map<string, { count: number; emphatic: boolean }>();
  for (const i of members) {
    const u = `${refs[i].source}:${refs[i].unit}`;
    const e = inUnit.get(u) ?? { count: 0, emphatic: false };
    e.count++;
    if (refs[i].emphatic) e.emphatic = true;
    inUnit.set(u, e);
  }
  for (const i of members) {
    const key = `${refs[i].source}:${refs[i].unit}`;
    units.add(key);
    const s = unitsByVoice.get(refs[i].voice) ?? new Set<string>();
    s.add(key);
    unitsByVoice.set(refs[i].voice, s);
  }
  let mainVoice = "";
  let most = -1;
  for (const [v, s] of [...unitsByVoice].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))) {
    if (s.size > most) {
      most = s.size;
      mainVoice = v;
    }
  }
  const positions = [...(unitsByVoice.get(mainVoice) ?? [])]
    .map((k) => ({ at: ordinals.get(k) ?? 0, ...inUnit.get(k)! }))
    .sort((a, b) => a.at - b.at);
  let passages = 0;
  let emphasised = 0;
  let count = 0;
  let emphatic = false;
  const close = () => {
    if (count >= 2 || emphatic) emphasised++;
  };
  positions.forEach((p, j) => {
    if (j === 0 || p.at - positions[j - 1].at >= 2) {
      if (j > 0) close();
      passages++;
      count = 0;
      emphatic = false;
    }
    count += p.count;
    emphatic ||= p.emphatic;
  });
  if (positions.length) close();
  const mentions = members.filter((i) => refs[i].voice === mainVoice).length;
  const own = totals?.get(mainVoice) ?? voiceTotals(refs.filter((r) => r.voice === mainVoice)).get(mainVoice) ?? { total: 0, notes: true };
  return { units: units.size, voices: unitsByVoice.size, mainVoice, passages, emphasised, mentions, voiceTotal: own.total, notes: own.notes };
}

/**
 * The support rule. Two or more voices: at least `minUnits` distinct units. One voice, only when the input has
 * few voices (`participantCount` ≤ `FEW_VOICES`): at least `minUnits` mentions and a passage weight (passages +
 * emphasised passages) of at least `MIN_PASSAGES`, in two or more separate passages; a short note's voice
 * (`SHORT_NOTE_MENTIONS`) needs two mentions and a passage weight of `SHORT_NOTE_PASSAGES`.
 * @param inputVoices people in the whole input (`participantCount`)
 */
export function isSupported(s: Support, minUnits: number, inputVoices: number): boolean {
  if (s.voices >= 2) return s.units >= minUnits;
  if (inputVoices > FEW_VOICES) return false;
  if (s.notes && s.voiceTotal < SHORT_NOTE_MENTIONS) return s.mentions >= 2 && s.passages + s.emphasised >= SHORT_NOTE_PASSAGES;
  return s.mentions >= minUnits && s.passages >= 2 && s.passages + s.emphasised >= MIN_PASSAGES;
}

/**
 * How many people the input holds, for `isSupported`: distinct voices, except asides — a voice of a source with
 * under 5% of that source's mentions while another voice holds at least half of them (a note-taker's remark in a
 * transcript, an undetected moderator's "okay"). A survey's respondents all count (no voice dominates its source),
 * so a workspace with an interview and 300 reviews has many voices, even if the interview is long.
 */
export function participantCount(refs: MentionRef[]): number {
  const bySource = new Map<string, Map<string, number>>();
  for (const r of refs) {
    const m = bySource.get(r.source) ?? new Map<string, number>();
    m.set(r.voice, (m.get(r.voice) ?? 0) + 1);
    bySource.set(r.source, m);
  }
  const people = new Set<string>();
  for (const counts of bySource.values()) {
    const total = [...counts.values()].reduce((a, b) => a + b, 0);
    const dominated = [...counts.values()].some((c) => c >= total / 2);
    for (const [v, c] of counts) if (!(dominated && c < 0.05 * total)) people.add(v);
  }
  return people.size;
}

/** Suffixes stripped from a lemma so inflections and derivations of one word meet ("scheduling", "scheduled"). */
const SUFFIX = /(?:ations?|ments?|ings?|ers?|ed|es|s)$/;

/** A content word's stem: its lemma, lower case, without a common suffix, a doubled final consonant undone. */
export function stem(lemma: string): string {
  let w = lemma.toLowerCase().replace(/['’]/g, "");
  if (w.length > 5) w = w.replace(SUFFIX, "");
  if (/([b-df-hj-np-tv-z])\1$/.test(w)) w = w.slice(0, -1);
  // A silent final "e" goes too, so "schedule" meets "scheduling" → "schedul".
  if (w.length > 4 && w.endsWith("e")) w = w.slice(0, -1);
  return w;
}

/** FNV-1a hash of a string, for feature hashing. */
function fnv(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

/**
 * Bag of content-word stems per row (TF-IDF weights, signed feature hashing into `dims` buckets, unit length; a
 * row without content words stays zero). Two mentions that use the same word ("appointment", "appointments")
 * get similar rows whatever the sentence around it.
 * @param words content words (lemmas) of each row
 * @param ignore content words (lemmas) that join nothing: the words of the survey question the rows answer, which
 *   every answer is about whether or not it repeats them ("notebook" in answers to "…like to see in Jupyter
 *   Notebook?")
 */
export function lexicalMatrix(words: string[][], dims = 256, ignore: string[] = []): Matrix {
  const n = words.length;
  const skip = new Set(ignore.map(stem));
  const stems = words.map((ws) => [...new Set(ws.map(stem).filter((w) => w.length >= 3 && !skip.has(w)))]);
  const df = new Map<string, number>();
  for (const s of stems) for (const w of s) df.set(w, (df.get(w) ?? 0) + 1);
  const data = new Float32Array(n * dims);
  for (let i = 0; i < n; i++) {
    let norm = 0;
    for (const w of stems[i]) {
      // A word in one mention only joins nothing; a word in most mentions is the product, not a theme.
      const f = df.get(w)!;
      if (f < 2 || f > Math.max(3, n / 4)) continue;
      const h = fnv(w);
      const v = Math.log(n / f) * (h & 1 ? 1 : -1);
      data[i * dims + ((h >>> 1) % dims)] += v;
    }
    for (let t = 0; t < dims; t++) norm += data[i * dims + t] ** 2;
    norm = Math.sqrt(norm);
    if (norm > 0) for (let t = 0; t < dims; t++) data[i * dims + t] /= norm;
  }
  return { data, rows: n, dims };
}

/**
 * Rows of `x` and `lex` side by side, weighted so that the cosine of two rows is (1 − w)·cos_x + w·cos_lex (for
 * rows with content words; others keep their `x` similarity scaled by 1 − w), then renormalised.
 */
export function blend(x: Matrix, lex: Matrix, w: number): Matrix {
  const d = x.dims + lex.dims;
  const a = Math.sqrt(1 - w);
  const b = Math.sqrt(w);
  const data = new Float32Array(x.rows * d);
  for (let i = 0; i < x.rows; i++) {
    let s = 0;
    for (let t = 0; t < x.dims; t++) {
      const v = a * x.data[i * x.dims + t];
      data[i * d + t] = v;
      s += v * v;
    }
    for (let t = 0; t < lex.dims; t++) {
      const v = b * lex.data[i * lex.dims + t];
      data[i * d + x.dims + t] = v;
      s += v * v;
    }
    const norm = Math.sqrt(s);
    if (norm > 0) for (let t = 0; t < d; t++) data[i * d + t] /= norm;
  }
  return { data, rows: x.rows, dims: d };
}

/**
 * Words that say when, how often or how much, and light verbs: shared by answers on any topic ("a year ago", "3
 * years", "I need to", "I use"), so two mentions sharing one of them have no topic in common.
 */
const LIGHT_WORDS = new Set(
  "year month week day hour minute time today night morning evening once have use try need get make go want know think say do be take come see work thing lot way".split(" "),
);

/**
 * Content words of a mention for `lexicalMatrix`: lemmas of nouns, proper nouns, verbs and adjectives, without
 * fillers and `LIGHT_WORDS`. The ways of writing signing in ("log in", "logs me in", "log-in", "logins", "sign
 * in", "sign-in") are one word, "login": users and note-takers alternate between them for the same subject.
 */
export function contentLemmas(tokens: Token[]): string[] {
  const out: string[] = [];
  tokens.forEach((k, i) => {
    const lemma = k.lemma.toLowerCase();
    if (signInAt(tokens, i) >= 0) return void out.push("login");
    if (k.type === "word" && !k.stop && k.value.length >= 3 && !FILLERS.has(k.normal) && !FILLERS.has(k.lemma) && !LIGHT_WORDS.has(lemma) && /^(NOUN|PROPN|VERB|ADJ)$/.test(k.pos)) {
      out.push(k.lemma);
    }
  });
  return out;
}

/** Inputs up to this many mentions are clustered on embeddings blended with shared words (`blend`). */
export const LEXICAL_MAX_MENTIONS = 2000;
/** Weight of the shared-word similarity in the blend. */
export const LEXICAL_WEIGHT = 0.3;
/** Inputs of at most this many mentions (one short note, a handful of answers) blend with `SMALL_LEXICAL_WEIGHT`. */
export const SMALL_INPUT_MENTIONS = 100;
/**
 * Shared-word weight for inputs of at most `SMALL_INPUT_MENTIONS`: the corpus mean that centring removes is
 * estimated from a few dozen vectors, so centred similarities of short answers are mostly noise, while a content
 * word two answers share ("letters", "claim", "meds") is still a topic they share.
 */
export const SMALL_LEXICAL_WEIGHT = 0.5;

/** Shared-word weight in the blend for an input of `n` mentions. */
export function lexicalWeight(n: number): number {
  return n <= SMALL_INPUT_MENTIONS ? SMALL_LEXICAL_WEIGHT : LEXICAL_WEIGHT;
}

/** Inputs up to this many mentions are clustered by `averageLinkage` (O(n³), ≈ 0.1 s at 400) instead of k-means. */
export const LINKAGE_MAX_MENTIONS = 400;
/**
 * Mean pairwise similarity (blended, centred space) down to which `averageLinkage` joins clusters. Chosen on the P16
 * transcript (0.25 to 0.35 give the same themes; 0.45 keeps only the tightest), not on the coded evaluation sets.
 */
export const LINKAGE_THRESHOLD = 0.3;

/**
 * Average-linkage agglomerative clustering: start from single rows, repeatedly join the two clusters whose mean
 * pairwise similarity is highest, while it is at least `threshold`. Unlike k-means it never forces a row into a
 * cluster: rows like nothing else stay alone. O(n³) time and n² memory, so for small inputs only.
 * Deterministic: ties go to the lowest indices.
 * @returns clusters of two or more rows (singletons are left out), members ascending, centroids from `x`
 */
export function averageLinkage(x: Matrix, threshold: number): Cluster[] {
  const n = x.rows;
  const d = x.dims;
  const sim = new Float32Array(n * n);
  for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) sim[i * n + j] = sim[j * n + i] = dotAt(x.data, i * d, x.data, j * d, d);
  const members: (number[] | null)[] = Array.from({ length: n }, (_, i) => [i]);
  for (;;) {
    let bi = -1;
    let bj = -1;
    let best = threshold;
    for (let i = 0; i < n; i++) {
      if (!members[i]) continue;
      for (let j = i + 1; j < n; j++) {
        if (!members[j]) continue;
        if (sim[i * n + j] >= best && (bi < 0 || sim[i * n + j] > best)) {
          best = sim[i * n + j];
          bi = i;
          bj = j;
        }
      }
    }
    if (bi < 0) break;
    const a = members[bi]!.length;
    const b = members[bj]!.length;
    // Lance–Williams update for average linkage.
    for (let k = 0; k < n; k++) {
      if (!members[k] || k === bi || k === bj) continue;
      const s = (a * sim[k * n + bi] + b * sim[k * n + bj]) / (a + b);
      sim[k * n + bi] = sim[bi * n + k] = s;
    }
    members[bi] = [...members[bi]!, ...members[bj]!].sort((p, q) => p - q);
    members[bj] = null;
  }
  return members.filter((m): m is number[] => !!m && m.length >= 2).map((m) => ({ members: m, centroid: centroidOf(x, m) }));
}
