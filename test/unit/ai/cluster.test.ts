import { describe, expect, it } from "vitest";
import {
  averageLinkage,
  blend,
  centroidOf,
  contentLemmas,
  lexicalWeight,
  cohesion,
  FEW_VOICES,
  isSupported,
  lexicalMatrix,
  mergeClusters,
  participantCount,
  passageOrdinals,
  pruneMembers,
  seededRandom,
  SHORT_NOTE_MENTIONS,
  SMALL_INPUT_MENTIONS,
  sphericalKMeans,
  stem,
  themeSupport,
} from "../../../core/ai/synthesis/cluster";
import { dot, normalize, toMatrix, type Matrix } from "../../../core/ai/vectors";
import { analyze } from "../../../core/ai/synthesis/nlp";

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

describe("support of a theme (one participant or several)", () => {
  // One interview: the participant's turns are units 1, 3, 5, … (the interviewer's in between are filtered out).
  const turns = (units: number[], voice = "s1\u0000P16", emphatic: number[] = []) =>
    units.map((unit) => ({ source: "s1", unit, voice, turn: true, emphatic: emphatic.includes(unit) }));

  it("counts a participant's consecutive turns as one passage and turns they come back to later as separate ones", () => {
    const all = turns([1, 3, 5, 7, 9, 11, 13, 15, 17, 19]);
    const ordinals = passageOrdinals(all);
    // Units 1, 3, 5 are consecutive turns of P16: one passage; 11 and 19 are returns to the theme.
    const s = themeSupport(all, [0, 1, 2, 5, 9], ordinals);
    expect(s).toMatchObject({ units: 5, voices: 1, passages: 3, mentions: 5 });
    expect(isSupported(s, 3, 1)).toBe(true);
    // Three mentions in one stretch of talk are one passage: a remark, not a recurring point.
    expect(isSupported(themeSupport(all, [0, 1, 2], ordinals), 3, 1)).toBe(false);
  });

  it("counts each paragraph or bullet of notes as its own passage", () => {
    const notes = [2, 3, 4, 8].map((unit) => ({ source: "n", unit, voice: "n\u0000" }));
    const s = themeSupport(notes, [0, 1, 2], passageOrdinals(notes));
    expect(s.passages).toBe(3);
  });

  it("lets two passages do when one dwells on the theme or says it with emphasis", () => {
    const all = turns([1, 3, 5, 7, 9, 11, 13]);
    const ordinals = passageOrdinals(all);
    // Two mentions of unit 1 (one passage dwelling on it) and unit 9 later: weight 2 + 1.
    const dwelt = [...all, { source: "s1", unit: 1, voice: "s1\u0000P16", turn: true, emphatic: false }];
    const s = themeSupport(dwelt, [0, 7, 4], passageOrdinals(dwelt));
    expect(s).toMatchObject({ passages: 2, emphasised: 1 });
    expect(isSupported(s, 3, 1)).toBe(true);
    // Same two passages without either: not enough.
    expect(isSupported(themeSupport(all, [0, 4, 6], ordinals), 3, 1)).toBe(true); // 1, 9, 13: three passages
    expect(isSupported(themeSupport(all, [0, 4], ordinals), 3, 1)).toBe(false); // two mentions only
    const loud = turns([1, 3, 5, 7, 9, 11, 13], "s1\u0000P16", [9]);
    const withCue = [...loud, { source: "s1", unit: 1, voice: "s1\u0000P16", turn: true, emphatic: false }];
    expect(themeSupport(withCue, [0, 7, 4], passageOrdinals(withCue)).emphasised).toBe(2);
  });

  it("keeps the two-voice rule when the input has many voices", () => {
    const many = Array.from({ length: 40 }, (_, i) => ({ source: "survey", unit: i, voice: `survey\u0000r${i}` }));
    const one = [...many, ...turns([1, 3, 5, 7, 9, 11, 13, 15, 17])];
    const members = [40, 42, 44, 46, 48];
    const s = themeSupport(one, members, passageOrdinals(one));
    expect(s.voices).toBe(1);
    expect(s.passages).toBeGreaterThanOrEqual(3);
    const voices = participantCount(one);
    expect(voices).toBeGreaterThan(FEW_VOICES);
    expect(isSupported(s, 3, voices)).toBe(false);
    // Two voices are enough anywhere once the theme has enough units.
    expect(isSupported(themeSupport(one, [0, 1, 40], passageOrdinals(one)), 3, voices)).toBe(true);
  });

  it("lets a short note's participant carry a point written twice, and nobody else", () => {
    // One short note: 20 bullets (units 0, 1, 2, …), each its own passage, one voice.
    const note = (count: number) => Array.from({ length: count }, (_, unit) => ({ source: "n", unit, voice: "n\u0000" }));
    const short = note(20);
    // Two answers to different questions.
    expect(isSupported(themeSupport(short, [3, 12], passageOrdinals(short)), 3, 1)).toBe(true);
    // One answer written in two sentences on the subject (two mentions of one bullet): the participant dwelt on it.
    const dwelt = [...short, { source: "n", unit: 7, voice: "n\u0000" }];
    expect(isSupported(themeSupport(dwelt, [7, 20], passageOrdinals(dwelt)), 3, 1)).toBe(true);
    // A single sentence is a remark.
    expect(isSupported(themeSupport(short, [3], passageOrdinals(short)), 3, 1)).toBe(false);
    // Long notes (a findings document) and transcripts keep the three-mention rule.
    const long = note(SHORT_NOTE_MENTIONS);
    expect(isSupported(themeSupport(long, [3, 12], passageOrdinals(long)), 3, 1)).toBe(false);
    const talk = Array.from({ length: 20 }, (_, i) => ({ source: "t", unit: 2 * i + 1, voice: "t\u0000P1", turn: true }));
    expect(isSupported(themeSupport(talk, [3, 12], passageOrdinals(talk)), 3, 1)).toBe(false);
    // And only when the input holds few people.
    expect(isSupported(themeSupport(short, [3, 12], passageOrdinals(short)), 3, FEW_VOICES + 1)).toBe(false);
  });

  it("counts people, not asides: a one-line remark in someone's interview is no participant, a survey's respondents all are", () => {
    const interview = turns(Array.from({ length: 60 }, (_, i) => i));
    expect(participantCount(interview)).toBe(1);
    expect(participantCount([...interview, { source: "s1", unit: 99, voice: "s1\u0000Notetaker" }])).toBe(1);
    const survey = Array.from({ length: 30 }, (_, i) => ({ source: "csv", unit: i, voice: `csv\u0000r${i}` }));
    expect(participantCount([...interview, ...survey])).toBe(31);
    const notes = (s: string) => [0, 1, 2].map((unit) => ({ source: s, unit, voice: `${s}\u0000` }));
    expect(participantCount([...notes("a"), ...notes("b")])).toBe(2);
  });
});

describe("shared words for small inputs", () => {
  it("stems inflections together and blends word overlap into the similarity", () => {
    expect(stem("appointments")).toBe(stem("appointment"));
    expect(stem("scheduling")).toBe(stem("scheduled"));
    const words = [["appointment", "hospital"], ["appointments", "schedule"], ["dark", "mode"], ["refill", "meds"], ["pharmacy", "refills"], ["letter", "claim"]];
    const lex = lexicalMatrix(words, 64);
    const rowOf = (m: Matrix, i: number) => m.data.subarray(i * m.dims, (i + 1) * m.dims);
    expect(dot(rowOf(lex, 0), rowOf(lex, 1))).toBeGreaterThan(0.3);
    expect(dot(rowOf(lex, 0), rowOf(lex, 2))).toBe(0);
    // A word found in one row only joins nothing: that row stays zero.
    expect(Array.from(rowOf(lex, 5)).every((v) => v === 0)).toBe(true);
    const x = toMatrix(words.map((_, i) => normalize(Array.from({ length: 8 }, (_, t) => (t === i ? 1 : 0.01)))));
    const b = blend(x, lex, 0.3);
    expect(b.dims).toBe(8 + 64);
    const cos = (m: Matrix, i: number, j: number) => dot(rowOf(m, i), rowOf(m, j));
    // Rows 0 and 1 share "appointment": closer after blending; rows 0 and 2 share nothing: not closer.
    expect(cos(b, 0, 1)).toBeGreaterThan(cos(x, 0, 1) + 0.05);
    expect(cos(b, 0, 2)).toBeLessThanOrEqual(cos(x, 0, 2) + 1e-6);
    for (let i = 0; i < b.rows; i++) expect(Math.sqrt(cos(b, i, i))).toBeCloseTo(1, 5);
  });

  it("reads every way of writing signing in as one word, and ignores words of time and light verbs", () => {
    const lemmas = (t: string) => contentLemmas(analyze(t).tokens);
    for (const t of ["My healthy Vet log-in is what I usually use.", "If you can log in with my Healthy vet.", "It logs me in where I need to be.", "Having to remember all my logins.", "Like logging into, enable face ID.", "The sign-in page", "I sign in twice"]) {
      expect(lemmas(t), t).toContain("login");
    }
    expect(lemmas("I signed the form")).not.toContain("login");
    // "a year ago" and "3 years" are no shared topic; nor are "use" and "need".
    expect(lemmas("I have a pending claim that has been sitting for 3 years.")).not.toContain("year");
    expect(lemmas("Probably a year ago I used it when I needed it.")).toEqual([]);
    expect(stem("schedule")).toBe(stem("scheduling"));
  });

  it("weighs shared words more in an input of a few dozen mentions", () => {
    expect(lexicalWeight(SMALL_INPUT_MENTIONS)).toBeGreaterThan(lexicalWeight(SMALL_INPUT_MENTIONS + 1));
  });
});

describe("averageLinkage (small inputs)", () => {
  it("recovers well-separated themes, leaves a point like no other out, and is deterministic", () => {
    const { x, labels } = blobs(4, 12, 32, 0.1, 11);
    const lone = toMatrix([...Array.from({ length: x.rows }, (_, i) => x.data.slice(i * 32, (i + 1) * 32)), normalize(Array.from({ length: 32 }, (_, t) => (t % 2 ? 1 : -1)))]);
    const cs = averageLinkage(lone, 0.5);
    expect(cs).toHaveLength(4);
    for (const c of cs) expect(new Set(c.members.map((i) => labels[i])).size).toBe(1);
    expect(cs.flatMap((c) => c.members)).not.toContain(x.rows);
    expect(averageLinkage(lone, 0.5).map((c) => c.members)).toEqual(cs.map((c) => c.members));
    // A threshold above every similarity joins nothing.
    expect(averageLinkage(lone, 1.01)).toEqual([]);
  });
});
