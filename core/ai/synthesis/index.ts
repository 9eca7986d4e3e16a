/**
 * LOCAL SYNTHESIS ENGINE (DESIGN.md section 2: "a deterministic local engine (no LLM exists offline)").
 * Implements POST /api/research/synthesize's core (spec 01 Research sources and synthesis; Insight fields).
 *
 * What it does, honestly: it finds recurring themes by clustering sentence embeddings, names them with words the
 * users used, and backs every insight with verbatim quotes. It does not "understand" the research: titles are the
 * most central evidence clause compressed by rules (a keyphrase template when none qualifies), types and severities
 * come from cue-word lexicons. Every step is deterministic
 * for the same input (seeded PRNG, stable sorts), and every quote is checked verbatim against its source.
 *
 * Pipeline (details, thresholds and measurements in README.md beside this file):
 *  1. mentions: units → verbatim mentions (whole short units, else sentences), dropping headings, too-short,
 *     non-informative answers, form templates, interviewer prompts/speakers, multiple-choice and name-list survey
 *     columns, cross-source boilerplate and duplicates;
 *  2. vectors: reuse per-unit vectors precomputed at ingestion (`embedUnits`), embed the rest in one batch;
 *  3. clusters: vectors centred (common direction removed; up to 2,000 mentions blended with shared content
 *     words); up to 400 mentions average linkage (mean cos ≥ 0.3), above spherical k-means with greedy k-means++
 *     seeding (k = 1.5·√(n/2)) and Elkan-style bounds (above 20,000 mentions fitted on a 10,000-row sample, then
 *     refined on all), members with cos < 0.3 to their centroid becoming noise;
 *     centroids with cos ≥ 0.7 merged; a cluster needs two voices
 *     and max(3, 0.4% of units) distinct units, or, when the input has few voices, one voice coming back to it in
 *     separate passages (cluster.ts `isSupported`);
 *  4. names: c-TF-IDF over wink-nlp noun phrases (domain words damped); clusters sharing their top phrase are
 *     merged, and so are a survey question's clusters whose names the respondents use as synonyms (thesaurus.ts:
 *     "git" / "version control"); a cluster whose top phrase is a domain word or covers < 20% of its mentions is
 *     dropped, unnamed;
 *  5. type and severity: negation-aware cue lexicons + survey-question cues; reach, volume and intensity;
 *  6. quotes: 3–5 central, diverse, on-topic mentions (MMR), then `groundQuotes` keeps only verbatim ones;
 *     A survey of several open questions runs steps 3–6 per question (questions.ts), the question's own words left
 *     out of the shared-word bag and damped in naming;
 *  7. order by volume × reach × tightness, cap at `maxInsights` (a survey: a raised cap shared by its questions, a
 *     floor each, the rest in proportion to their answers); `matchExisting` sets `merge_into`.
 *  8. closed survey questions (survey.ts): counts, percentages, mean ratings and ranks from the answers, as up to
 *     6 quantitative insights listed first.
 */
import type { Embedder } from "../ports";
import { createHash } from "node:crypto";
import { toMatrix, type Matrix } from "../vectors";
import { classifyType, cueShares, impactClause, mentionCues, severityOf, type Cues, type InsightType } from "./classify";
import {
  centered,
  centroidOf,
  averageLinkage,
  blend,
  cohesion,
  contentLemmas,
  isSupported,
  LEXICAL_MAX_MENTIONS,
  lexicalWeight,
  LINKAGE_MAX_MENTIONS,
  LINKAGE_THRESHOLD,
  lexicalMatrix,
  mergeClusters,
  participantCount,
  passageOrdinals,
  pruneMembers,
  sphericalKMeans,
  themeSupport,
  voiceTotals,
  type Cluster,
  type MentionRef,
} from "./cluster";
import { markDuplicates } from "./dedup";
import { vectorsAligned } from "./embed";
import { boilerplateTexts, structuredQuestions, interviewerSpeakers, unitSkipReason } from "./filters";
import { normalizeText, unitMentions, type MentionSpan } from "./mentions";
import { distinctTop, insightTitle, phraseKey, keyphraseOverlap, MIN_COVERAGE, mentionPhrases, phraseSpread, rankPhrases, subjectOverlap, titleSubject, type PhraseOcc, type RankedPhrase } from "./naming";
import { analyze } from "./nlp";
import { Thesaurus } from "./thesaurus";
import { isEmphatic } from "./notes";
import { groundQuotes, pickQuotes, type Quote } from "./quotes";
import { allocateThemes, questionSegments, surveyThemeCap } from "./questions";
import { surveyInsights } from "./survey";
import type {
  InsightDraft,
  SynthesisInput,
  SynthesisOptions,
  SynthesisOutput,
  SynthesisSource,
  SynthesisStats,
} from "./types";

export * from "./types";
export { embedUnits } from "./embed";
export { groundQuotes } from "./quotes";
export { matchExisting } from "./dedup";
export { unitMentions } from "./mentions";

export const DEFAULT_OPTIONS: SynthesisOptions = {
  seed: 42,
  kScale: 1.5,
  maxInsights: 25,
  mergeThreshold: 0.7,
  memberThreshold: 0.3,
  matchThreshold: 0.85,
  textMatchThreshold: 0.6,
};

/** One mention in the corpus being synthesised. */
export interface Mention {
  sourceIndex: number;
  unitIndex: number;
  span: MentionSpan;
  speaker: string | null;
  question?: string;
  norm: string;
}

/** Mentions of all sources after every filter, with their vectors, plus filter counts. */
export interface Corpus {
  mentions: Mention[];
  vectors: Float32Array[];
  stats: Pick<SynthesisStats, "units" | "mentions" | "dropped" | "vectors_reused" | "vectors_computed">;
  /** Time spent in the embedder, ms. */
  embedMs: number;
}

/**
 * Steps 1–2: mentions and their vectors for a set of sources (shared with the Bedrock engine).
 * @param embedder used for mentions without valid precomputed vectors
 * @throws whatever the embedder throws
 */
export async function collectMentions(sources: SynthesisSource[], embedder: Embedder): Promise<Corpus> {
  const dims = embedder.dimensions;
  const spanCache = new Map<string, MentionSpan[]>();
  const spansOf = (u: SynthesisSource["units"][number]) => {
    const key = `${u.kind}\u0000${u.text}`;
    let s = spanCache.get(key);
    if (!s) {
      s = unitMentions(u);
      spanCache.set(key, s);
    }
    return s;
  };
  const dropped = { interviewer_units: 0, structured_answer_units: 0, boilerplate: 0, duplicate: 0 };
  let units = 0;
  let reused = 0;
  let computed = 0;
  const raw: { m: Mention; vec?: Float32Array }[] = [];
  const toEmbed: number[] = [];

  for (let si = 0; si < sources.length; si++) {
    const src = sources[si];
    units += src.units.length;
    const interviewers = interviewerSpeakers(src.units);
    const choices = structuredQuestions(src.units);
    const skip = src.units.map((u) => unitSkipReason(u, interviewers, choices));
    const spans = src.units.map((u, ui) => (skip[ui] ? null : spansOf(u)));
    const aligned = src.vectors ? vectorsAligned(spans, src.vectors, dims, src.vectors_embedder_id, embedder.id) : false;
    src.units.forEach((u, ui) => {
      const reason = skip[ui];
      if (reason) {
        dropped[`${reason}_units`]++;
        return;
      }
      spans[ui]!.forEach((span, j) => {
        const m: Mention = {
          sourceIndex: si,
          unitIndex: ui,
          span,
          speaker: u.speaker ?? null,
          question: u.fields?.question ?? span.question,
          norm: normalizeText(span.text),
        };
        if (aligned) {
          raw.push({ m, vec: src.vectors![ui].subarray(j * dims, (j + 1) * dims) });
          reused++;
        } else {
          toEmbed.push(raw.length);
          raw.push({ m });
        }
      });
    });
  }
  const tEmbed = performance.now();
  if (toEmbed.length) {
    const vecs = await embedder.embed(toEmbed.map((i) => raw[i].m.span.text));
    if (vecs.length !== toEmbed.length) throw new Error(`embedder returned ${vecs.length} vectors for ${toEmbed.length} texts`);
    toEmbed.forEach((i, k) => {
      if (vecs[k].length !== dims) throw new Error(`embedder returned ${vecs[k].length} dimensions, expected ${dims}`);
      raw[i].vec = vecs[k];
    });
    computed = toEmbed.length;
  }
  const embedMs = performance.now() - tEmbed;
  const total = raw.length;
  const boiler = boilerplateTexts(raw.map((r) => ({ norm: r.m.norm, sourceId: sources[r.m.sourceIndex].id })));
  const seen = new Set<string>();
  const mentions: Mention[] = [];
  const vectors: Float32Array[] = [];
  for (const r of raw) {
    if (boiler.has(r.m.norm)) {
      dropped.boilerplate++;
      continue;
    }
    const key = `${r.m.sourceIndex}\u0000${r.m.speaker ?? ""}\u0000${r.m.norm}`;
    if (seen.has(key)) {
      dropped.duplicate++;
      continue;
    }
    seen.add(key);
    mentions.push(r.m);
    vectors.push(r.vec!);
  }
  return {
    mentions,
    vectors,
    stats: { units, mentions: total, dropped, vectors_reused: reused, vectors_computed: computed },
    embedMs,
  };
}

/** Number of clusters k-means starts from: scale·√(n/2), between 2 and 150 (over-clustering; merging follows). */
export function initialK(n: number, scale = 1): number {
  return Math.max(2, Math.min(150, Math.round(scale * Math.sqrt(n / 2))));
}

/** Centred-space centroid similarity above which clusters sharing a keyphrase are merged. */
const ANCHORED_MERGE = 0.55;
/** Subject-word overlap (see `subjectOverlap`) at which two clusters' titles name the same theme. */
const SAME_SUBJECT = 0.6;
/** Centred-space centroid similarity above which clusters sharing most keyphrase words (`keyphraseOverlap`) merge. */
const KEYPHRASE_MERGE = 0.45;

/**
 * Thesaurus relatedness (`Thesaurus.relatedness`) of two survey-answer clusters' names at which they are one theme,
 * with centroids at least `SYNONYM_SIM` alike. Set on the 2015 Jupyter survey: the version-control clusters of one
 * question ("git, diff" / "version control") score 0.33–0.35 at centroid similarity 0.10–0.21; the pairs this
 * leaves apart score higher on names that merely co-occur ("copy, paste" / "section" 0.66) but have centroids at
 * 0.05 or less.
 */
const SYNONYM = 0.33;
const SYNONYM_SIM = 0.1;

/** Whether a word of the (non-domain) phrase `p` is a word of one of the other cluster's non-domain `top` phrases. */
function sharesWord(p: RankedPhrase, top: RankedPhrase[]): boolean {
  if (p.domain) return false;
  const words = new Set(p.key.split(" ").filter((w) => w.length > 2));
  return top.some((t) => !t.domain && t.key.split(" ").some((w) => words.has(w)));
}

/** Share of members containing at least one of the top phrases. */
function coverageOf(phrases: PhraseOcc[][], members: number[], top: RankedPhrase[]): number {
  if (!top.length || !members.length) return 0;
  const keys = new Set(top.map((t) => t.key));
  return members.filter((i) => phrases[i].some((p) => keys.has(p.key))).length / members.length;
}

/**
 * Order of insights: volume × reach × tightness = mention_count · (1 + ½·log2 frequency) · cohesion, so a theme
 * many people raise in several sources, stated consistently, comes first.
 */
export function rankScore(d: Pick<InsightDraft, "mention_count" | "frequency" | "cohesion">): number {
  return d.mention_count * (1 + 0.5 * Math.log2(Math.max(1, d.frequency))) * d.cohesion;
}

/** Stable content order: title, then a digest of the text (ties between identical sources fall back to id). */
function byContent(a: SynthesisSource, b: SynthesisSource): number {
  // Code-unit order, not localeCompare: the same on every machine whatever its locale.
  const cmp = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);
  return cmp(a.title, b.title) || cmp(contentDigest(a), contentDigest(b)) || cmp(a.id, b.id);
}
const digests = new WeakMap<SynthesisSource, string>();
function contentDigest(s: SynthesisSource): string {
  let d = digests.get(s);
  if (!d) digests.set(s, (d = createHash("sha1").update(s.extracted_text).digest("hex")));
  return d;
}

const unitKey = (m: Mention) => `${m.sourceIndex}:${m.unitIndex}`;

/** Whose words a mention is: its speaker in its source; a source's unattributed mentions are one voice. */
function voiceOf(m: Mention, sources: SynthesisSource[]): string {
  return `${sources[m.sourceIndex].id}\u0000${m.speaker ?? ""}`;
}

/** Who a one-voice theme comes from, as the description names them: the speaker, else the source. */
function oneVoice(m: Mention, source: SynthesisSource): string {
  if (m.speaker) return `One participant (${m.speaker})`;
  return source.source_type === "interview" ? `One participant (“${source.title}”)` : `One source (“${source.title}”)`;
}

function distinctUnits(mentions: Mention[], members: number[]): number {
  return new Set(members.map((i) => unitKey(mentions[i]))).size;
}

/**
 * Distinct units per source id of a cluster's members (their sum is `distinctUnits`): a draft's `mentions_by_source`.
 * @param sources the run's sources, by source index
 */
export function unitsBySource(members: readonly number[], at: (i: number) => { sourceIndex: number; unitIndex: number }, sources: readonly { id: string }[]): Record<string, number> {
  const units = new Map<number, Set<number>>();
  for (const i of members) {
    const m = at(i);
    const set = units.get(m.sourceIndex) ?? new Set<number>();
    set.add(m.unitIndex);
    units.set(m.sourceIndex, set);
  }
  return Object.fromEntries([...units].map(([s, set]) => [sources[s]!.id, set.size]));
}

/** A draft's `mention_count`: the sum of its mentions per source. */
export const totalMentions = (bySource: Record<string, number>): number => Object.values(bySource).reduce((a, n) => a + n, 0);

function listJoin(items: string[]): string {
  if (items.length <= 1) return items.join("");
  return `${items.slice(0, -1).join(", ")} and ${items[items.length - 1]}`;
}

const pct = (x: number) => `${Math.round(x * 100)}%`;

const TYPE_LABEL: Record<InsightType, string> = {
  pain_point: "pain points",
  feature_request: "feature requests",
  opportunity: "opportunities",
  behavior: "behaviours",
  feedback_theme: "feedback themes",
};

interface Named {
  cluster: Cluster;
  top: RankedPhrase[];
}

/**
 * Synthesise insights from completed sources with the local engine.
 *
 * @param input sources (units + extracted_text, optional precomputed vectors), an embedder, the workspace's
 *   existing insights (for `merge_into`) and options (see `SynthesisOptions`; defaults in `DEFAULT_OPTIONS`)
 * @returns insights (most widespread first, at most `maxInsights`), a one-paragraph summary and stats
 * @throws whatever the embedder throws; Error when a precomputed or embedded vector has the wrong dimension
 */
export async function synthesize(input: SynthesisInput): Promise<SynthesisOutput> {
  const t0 = performance.now();
  const opts: SynthesisOptions = { ...DEFAULT_OPTIONS, ...input.options };
  const { embedder } = input;
  // The result must not depend on the order the caller lists the sources in (ids are random, listing order is
  // not meaningful): order them by content, so the same sources always give the same insights.
  const sources = [...input.sources].sort(byContent);

  const corpus = await collectMentions(sources, embedder);
  const t1 = performance.now();
  const { mentions } = corpus;
  const n = mentions.length;

  // 3–6. Themes. A survey is analysed one open question at a time (questions.ts), anything else as one body of text.
  const segments = questionSegments(mentions, sources);
  // Which phrases mean the same to these respondents, learned from the whole input (thesaurus.ts): short answers
  // to one question rarely name two synonyms at once, longer answers elsewhere do.
  const allPhrases = segments ? mentions.map((m) => mentionPhrases(m.span)) : undefined;
  const thesaurus = allPhrases ? new Thesaurus(allPhrases) : undefined;
  const parts: ThemeDrafts[] = [];
  for (const seg of segments ?? [{ key: "", question: null, asked: null, members: mentions.map((_, i) => i) }]) {
    const sub = segments ? { mentions: seg.members.map((i) => mentions[i]), vectors: seg.members.map((i) => corpus.vectors[i]) } : corpus;
    const vocabulary = allPhrases && thesaurus ? { thesaurus, phrases: seg.members.map((i) => allPhrases[i]) } : undefined;
    parts.push(themeDrafts(sources, sub.mentions, sub.vectors, embedder, opts, seg.question, seg.asked, vocabulary));
  }
  // Same title twice can only come from different phrase keys (or questions) with one written form: keep the larger.
  const seenTitles = new Set<string>();
  const unique = parts
    .flatMap((p, s) => p.drafts.map((d) => ({ d, s })))
    .sort((a, b) => rankScore(b.d) - rankScore(a.d) || a.d.title.localeCompare(b.d.title) || a.s - b.s)
    .filter(({ d }) => {
      const key = d.title.toLowerCase();
      if (seenTitles.has(key)) return false;
      seenTitles.add(key);
      return true;
    });
  let drafts: InsightDraft[];
  if (!segments) drafts = unique.map(({ d }) => d).slice(0, opts.maxInsights);
  else {
    // Each question's share of a raised cap: a floor, then in proportion to the answers it received.
    const available = parts.map((_, s) => unique.filter((u) => u.s === s).length);
    const weights = parts.map((p) => p.answers);
    const kept = allocateThemes(weights, available, surveyThemeCap(opts.maxInsights, available.filter((a) => a > 0).length));
    const taken = parts.map(() => 0);
    drafts = unique.filter(({ s }) => taken[s]++ < kept[s]).map(({ d }) => d);
  }
  // Closed survey questions: figures counted from the answers (survey.ts), first, besides the themes' cap.
  const insights: InsightDraft[] = [...(await surveyInsights(sources, corpus, embedder)), ...drafts];
  const t3 = performance.now();
  const sum = (f: (p: ThemeDrafts) => number) => parts.reduce((a, p) => a + f(p), 0);
  const totalClustered = sum((p) => p.clustered);
  const clusterMs = sum((p) => p.clusterMs);

  // 7. Dedup against the workspace.
  await markDuplicates(insights, input.existing, embedder, opts);

  const counts = new Map<InsightType, number>();
  for (const d of insights) counts.set(d.insight_type, (counts.get(d.insight_type) ?? 0) + 1);
  const breakdown = [...counts.entries()].sort((a, b) => b[1] - a[1]).map(([t, c]) => `${c} ${TYPE_LABEL[t]}`);
  const summary = insights.length
    ? `Synthesised ${insights.length} insights from ${totalClustered} of ${n} mentions across ${sources.length} sources` +
      (segments ? `, question by question (${segments.filter((g) => g.question).length} open questions)` : "") +
      ` (${listJoin(breakdown)}). Leading themes: ${insights
        .slice(0, 3)
        .map((d) => `${d.title} (${d.frequency} ${d.frequency === 1 ? "source" : "sources"}, ${d.mention_count} mentions)`)
        .join("; ")}.`
    : `No recurring theme had enough support in ${n} mentions across ${sources.length} sources.`;

  const t4 = performance.now();
  return {
    insights,
    summary,
    stats: {
      sources: sources.length,
      ...corpus.stats,
      clustered: totalClustered,
      noise: sum((p) => p.noise),
      clusters_initial: sum((p) => p.clustersInitial),
      clusters_final: sum((p) => p.clustersFinal),
      clusters_unnamed: sum((p) => p.unnamed),
      quotes_proposed: sum((p) => p.quotesProposed),
      quotes_grounded: sum((p) => p.quotesGrounded),
      timings_ms: {
        mentions: Math.round(t1 - t0 - corpus.embedMs),
        embed: Math.round(corpus.embedMs),
        cluster: Math.round(clusterMs),
        name: Math.round(t3 - t1 - clusterMs),
        total: Math.round(t4 - t0),
      },
    },
  };
}

/** Themes of one body of text (a whole input, or one survey question's answers) with what the stats count. */
interface ThemeDrafts {
  /** Drafts, most widespread first. */
  drafts: InsightDraft[];
  /** Distinct units (answers, turns, paragraphs) with mentions: a survey question's weight in the budget. */
  answers: number;
  clustered: number;
  noise: number;
  clustersInitial: number;
  clustersFinal: number;
  unnamed: number;
  quotesProposed: number;
  quotesGrounded: number;
  clusterMs: number;
}

/**
 * Steps 3–6 on one body of text: cluster its mentions, keep the supported clusters, name them, type them, pick and
 * ground their quotes. Everything here is relative to the mentions given (support threshold, domain words,
 * c-TF-IDF), so a survey question's answers are analysed as if they were the whole input.
 *
 * @param question the survey question these mentions answer, named in every description; null for any other input
 * @param asked the question as asked, instructions included: its words are the answers' context, not a topic they
 *   share (cluster.ts `lexicalMatrix`)
 * @param vocabulary for a survey question's answers: phrase relatedness learned from the whole input, and these
 *   mentions' phrase candidates (`mentionPhrases`) it was learned from, so they are not extracted twice
 */
function themeDrafts(
  sources: SynthesisSource[],
  mentions: Mention[],
  vectors: Float32Array[],
  embedder: Embedder,
  opts: SynthesisOptions,
  question: string | null,
  asked: string | null = null,
  vocabulary?: { thesaurus: Thesaurus; phrases: PhraseOcc[][] },
): ThemeDrafts {
  const t1 = performance.now();
  const x: Matrix = toMatrix(vectors, embedder.dimensions);
  const n = mentions.length;

  // 3. Cluster.
  const k = initialK(n, opts.kScale);
  let clusters: Cluster[] = [];
  let clustersInitial = 0;
  let noise = 0;
  // Clustering runs in the centred space (see `centered`); output centroids are in the embedder's own space.
  // Small inputs (a few interviews or notes): sentence embeddings of short spoken sentences are noisy, so words the
  // mentions share ("appointment", "scheduling") weigh in too (cluster.ts `blend`).
  const askedTokens = asked ? analyze(asked).tokens : [];
  const askedWords = contentLemmas(askedTokens);
  const askedKeys = new Set(askedTokens.filter((t) => t.type === "word" && !t.stop).map((t) => phraseKey([t.normal])));
  const xc =
    n <= LEXICAL_MAX_MENTIONS
      ? blend(centered(x), lexicalMatrix(mentions.map((m) => contentLemmas(m.span.tokens)), undefined, askedWords), lexicalWeight(n))
      : centered(x);
  if (n >= 2 && n <= LINKAGE_MAX_MENTIONS) {
    // Small inputs: average linkage, which leaves a mention that is like no other out instead of forcing it into a
    // theme (k-means on a few dozen answers mixes unrelated ones), and has no seed.
    clusters = averageLinkage(xc, LINKAGE_THRESHOLD);
    clustersInitial = clusters.length;
    noise = n - clusters.reduce((a, c) => a + c.members.length, 0);
    clusters = mergeClusters(xc, clusters, opts.mergeThreshold);
  } else if (n >= 2) {
    const km = sphericalKMeans(xc, k, opts.seed);
    const groups: number[][] = Array.from({ length: km.centroids.rows }, () => []);
    for (let i = 0; i < n; i++) groups[km.assign[i]].push(i);
    clusters = groups.filter((g) => g.length).map((g) => ({ members: g, centroid: centroidOf(xc, g) }));
    clustersInitial = clusters.length;
    const pruned = pruneMembers(xc, clusters, opts.memberThreshold);
    noise = pruned.noise.length;
    clusters = mergeClusters(xc, pruned.clusters, opts.mergeThreshold);
  }
  const unitsWithMentions = new Set(mentions.map(unitKey)).size;
  const minMentions = opts.minMentions ?? Math.max(3, Math.ceil(0.004 * unitsWithMentions));
  // Support: two voices, or one voice coming back to the theme in separate passages when the input has few voices.
  const refs: MentionRef[] = mentions.map((m) => ({
    source: sources[m.sourceIndex].id,
    unit: m.unitIndex,
    voice: voiceOf(m, sources),
    turn: sources[m.sourceIndex].units[m.unitIndex].kind === "turn",
    emphatic: isEmphatic(m.span.text),
  }));
  const ordinals = passageOrdinals(refs);
  const inputVoices = participantCount(refs);
  const totals = voiceTotals(refs);
  clusters = clusters.filter((c) => isSupported(themeSupport(refs, c.members, ordinals, totals), minMentions, inputVoices));
  const t2 = performance.now();

  // 4. Name: c-TF-IDF keyphrases; clusters sharing their top phrase are one theme.
  const phrases: PhraseOcc[][] = vocabulary?.phrases ?? mentions.map((m) => mentionPhrases(m.span));
  const globalCount = new Map<string, number>();
  for (const list of phrases) for (const p of list) globalCount.set(p.key, (globalCount.get(p.key) ?? 0) + 1);
  const name = (cs: Cluster[]): Named[] => {
    const avg = n / Math.max(1, cs.length);
    const spread = phraseSpread(cs.map((c) => c.members.map((i) => phrases[i])));
    // The question's own words name what every answer is about, not a theme ("notebook" in answers to "…in
    // Jupyter Notebook?"): they rank as domain words.
    for (const k of askedKeys) spread.set(k, 1);
    return cs.map((c) => ({
      cluster: c,
      top: distinctTop(rankPhrases(c.members.map((i) => phrases[i]), globalCount, avg, spread, n, c.members.map((i) => refs[i].voice)), 3),
    }));
  };
  let named = name(clusters);
  const coverage = (members: number[], top: RankedPhrase[]) => coverageOf(phrases, members, top);
  // Clusters named by the same phrase are one theme: same top phrase; titles whose subjects share most of their
  // words ("text and editing" / "text editing": a reader could not tell them apart); or a word of one's top
  // phrase in the other's top three ("git integration" / "github, git, version control") with centroids at
  // least `ANCHORED_MERGE` similar.
  for (let pass = 0; pass < 5; pass++) {
    const parent = named.map((_, i) => i);
    const find = (i: number): number => (parent[i] === i ? i : (parent[i] = find(parent[i])));
    let merges = 0;
    for (let a = 0; a < named.length; a++) {
      for (let b = a + 1; b < named.length; b++) {
        const ta = named[a].top;
        const tb = named[b].top;
        if (!ta.length || !tb.length) continue;
        const same = ta[0].key === tb[0].key || subjectOverlap(ta, tb) >= SAME_SUBJECT;
        const sim = dotVec(named[a].cluster.centroid, named[b].cluster.centroid);
        const anchored = (sharesWord(ta[0], tb) || sharesWord(tb[0], ta)) && sim >= ANCHORED_MERGE;
        // Near-duplicates: most keyphrase words in common and centroids close (one subject named two ways).
        const overlapping = keyphraseOverlap(ta, tb) >= 0.5 && sim >= KEYPHRASE_MERGE;
        // Synonymous names (thesaurus.ts: "git, diff" / "version control"), for a survey question's short answers,
        // with centroids somewhat alike. First pass only: merged clusters are named anew, and relatedness between
        // merged names would chain themes together.
        const rel = pass === 0 && vocabulary ? vocabulary.thesaurus.relatedness(ta, tb) : 0;
        const synonymous = rel >= SYNONYM && sim >= SYNONYM_SIM;
        if ((same || anchored || overlapping || synonymous) && find(a) !== find(b)) {
          parent[find(b)] = find(a);
          merges++;
        }
      }
    }
    if (!merges) break;
    const groups = new Map<number, number[]>();
    named.forEach((_, i) => groups.set(find(i), [...(groups.get(find(i)) ?? []), i]));
    named = name(
      [...groups.values()].map((g) => {
        if (g.length === 1) return named[g[0]].cluster;
        const members = g.flatMap((i) => named[i].cluster.members).sort((p, q) => p - q);
        return { members, centroid: centroidOf(xc, members) };
      }),
    );
  }

  // A cluster whose best phrase covers too few of its mentions has no nameable shared topic: drop it.
  const unnamed = named.filter((c) => !c.top.length || c.top[0].domain || coverage(c.cluster.members, c.top) < MIN_COVERAGE);
  named = named.filter((c) => !unnamed.includes(c));

  // 5–6. Type, severity, quotes, description.
  const sourcesById = new Map(sources.map((s) => [s.id, s]));
  let quotesProposed = 0;
  let quotesGrounded = 0;
  const totalClustered = named.reduce((a, c) => a + c.cluster.members.length, 0);
  const avgMentions = Math.max(1, named.reduce((a, c) => a + distinctUnits(mentions, c.cluster.members), 0) / Math.max(1, named.length));
  let drafts: InsightDraft[] = [];
  for (const { cluster, top } of named) {
    // The study's method is context, not evidence: a theme made mostly of it is no finding, and the rest of a
    // theme is counted, quoted and named without it.
    const members = cluster.members.filter((i) => !mentions[i].span.method);
    if (members.length < 2 || members.length * 2 < cluster.members.length) continue;
    const centroid = centroidOf(x, members); // in the embedder's space: stored, searched, matched later
    const cues: Cues[] = members.map((i) => mentionCues(mentions[i].span.tokens, mentions[i].span.text, mentions[i].question));
    const shares = cueShares(cues);
    const { type, positive } = classifyType(shares);
    const bySource = new Map<number, number>();
    for (const i of members) bySource.set(mentions[i].sourceIndex, (bySource.get(mentions[i].sourceIndex) ?? 0) + 1);
    const sourceOrder = [...bySource.entries()].sort((a, b) => b[1] - a[1] || a[0] - b[0]).map(([s]) => s);
    const source_ids = sourceOrder.map((s) => sources[s].id);
    const frequency = source_ids.length;
    const mentions_by_source = unitsBySource(members, (i) => mentions[i], sources);
    const mention_count = totalMentions(mentions_by_source);
    const severity = severityOf(type, frequency / Math.max(1, sources.length), sources.length, mention_count / avgMentions, shares);
    const topKeys = new Set(top.map((t) => t.key));

    const candidates = members.map((i) => ({
      quote: { text: mentions[i].span.text, source_id: sources[mentions[i].sourceIndex].id, speaker: mentions[i].speaker } as Quote,
      sim: dotRow(x, i, centroid),
      vector: x.data.subarray(i * x.dims, (i + 1) * x.dims),
      onTopic: phrases[i].some((p) => topKeys.has(p.key)),
      // The participant's own words (quoted speech, answers) over the note-taker's paraphrase.
      ownWords: mentions[i].span.origin !== "note",
    }));
    const proposed = pickQuotes(candidates, 3, 5);
    const quotes = groundQuotes(proposed, sourcesById);
    quotesProposed += proposed.length;
    quotesGrounded += quotes.length;
    if (!quotes.length) continue;

    // A sentence from the cluster's own central mentions; the keyphrase template only when none qualifies.
    const who = titleSubject(themeSupport(refs, members, ordinals, totals).voices, [...new Set(sourceOrder.map((s) => sources[s].source_type))]);
    const title = insightTitle(
      members.map((i, k) => ({ span: mentions[i].span, sim: candidates[k].sim, voice: voiceOf(mentions[i], sources), question: mentions[i].question })),
      top,
      type,
      positive,
      who,
    );
    const types = [...new Set(sourceOrder.map((s) => sources[s].source_type))];
    const about = top.length ? listJoin(top.map((t) => `“${t.surface}”`)) : "a shared topic";
    const support = themeSupport(refs, members, ordinals, totals);
    // Which question the answers were given to: the same words mean a difficulty under one and a wish under another.
    const asked = question ? `, answering “${question}”,` : "";
    const description =
      (support.voices === 1
        ? `${oneVoice(mentions[members[0]], sources[sourceOrder[0]])}, in ${support.passages === 1 ? "one passage" : `${support.passages} separate passages`} (${mention_count} ${mention_count === 1 ? "mention" : "mentions"}), ` +
          `speaks of ${about}${question ? ` in answers to “${question}”` : ""}. `
        : `${mention_count} ${mention_count === 1 ? "mention" : "mentions"} across ${frequency} ${frequency === 1 ? "source" : "sources"} ` +
          `(${types.join(", ")})${asked} concern ${about}. `) +
      `${pct(shares.pain)} describe a problem, ${pct(shares.request)} ask for a change, ${pct(shares.positive)} are positive` +
      `${impactClause(cues)}.` +
      (frequency > 1 ? ` Most mentions come from “${sources[sourceOrder[0]].title}”.` : "");
    drafts.push({
      title,
      description,
      insight_type: type,
      severity,
      quotes,
      source_ids,
      frequency,
      mention_count,
      mentions_by_source,
      vector: centroid,
      embedder_id: embedder.id,
      keyphrases: top.map((t) => t.surface),
      cohesion: Math.round(cohesion(x, { members, centroid }) * 1000) / 1000,
    });
  }
  drafts.sort((a, b) => rankScore(b) - rankScore(a) || a.title.localeCompare(b.title));
  return {
    drafts,
    answers: unitsWithMentions,
    clustered: totalClustered,
    noise,
    clustersInitial,
    clustersFinal: named.length,
    unnamed: unnamed.length,
    quotesProposed,
    quotesGrounded,
    clusterMs: t2 - t1,
  };
}

function dotVec(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let t = 0; t < a.length; t++) s += a[t] * b[t];
  return s;
}

function dotRow(x: Matrix, i: number, c: Float32Array): number {
  let s = 0;
  const off = i * x.dims;
  for (let t = 0; t < x.dims; t++) s += x.data[off + t] * c[t];
  return s;
}
