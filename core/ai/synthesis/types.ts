/**
 * Shapes of the synthesis engines' input and output (spec 01 Insight; POST /api/research/synthesize).
 */
import type { TextUnit } from "../../extract/types";
import type { Embedder } from "../ports";
import type { InsightType, Severity } from "./classify";
import type { Quote } from "./quotes";

export type { InsightType, Severity } from "./classify";
export type { Quote } from "./quotes";

/** One completed research source, as synthesis reads it. */
export interface SynthesisSource {
  id: string;
  title: string;
  /** interview, support_ticket, survey, usage_data, feedback, other (spec 01 Research source). */
  source_type: string;
  units: TextUnit[];
  extracted_text: string;
  /**
   * Precomputed by `embedUnits(units, embedder)` at ingestion: one entry per unit (same order), holding the
   * vectors of that unit's mentions (`unitMentions`) concatenated, `mentions × dimensions` floats (empty when the
   * unit has no mention). Ignored (recomputed) when misaligned or from another embedder.
   */
  vectors?: Float32Array[];
  /** `Embedder.id` that produced `vectors`; when set and different from the synthesis embedder, vectors are recomputed. */
  vectors_embedder_id?: string;
}

/** An insight already in the workspace, for merge detection. */
export interface ExistingInsight {
  id: string;
  title: string;
  description: string;
  /** Its stored vector (the centroid of its mentions from an earlier synthesis, same embedder). */
  vector?: Float32Array;
  /**
   * Its "title. description" already embedded by the same embedder (the insight's search vector, unit length), for
   * an insight without a centroid: dedup then compares with it instead of embedding the text again on every run.
   */
  textVector?: Float32Array;
}

export interface SynthesisOptions {
  /** PRNG seed of the clustering (default 42). */
  seed: number;
  /** Multiplier of the initial number of k-means clusters, scale·√(n/2) (default 1). */
  kScale: number;
  /**
   * Themes returned at most (default 25), the most widespread first; a survey analysed question by question shares
   * a raised cap (questions.ts `surveyThemeCap`). Quantitative insights from closed questions come besides.
   */
  maxInsights: number;
  /** Minimum distinct units for a cluster to become an insight (default: max(3, 0.4% of units with mentions)). */
  minMentions?: number;
  /** Centroid cosine at or above which two clusters are the same theme (default 0.8). */
  mergeThreshold: number;
  /** Mentions less similar than this to their centroid are noise (default 0.3). */
  memberThreshold: number;
  /** Cosine between a new insight's centroid and an existing insight's vector at or above which it merges (default 0.85). */
  matchThreshold: number;
  /** Same, when the existing insight has no vector and texts (title + description) are compared (default 0.8). */
  textMatchThreshold: number;
}

export interface SynthesisInput {
  sources: SynthesisSource[];
  embedder: Embedder;
  existing?: ExistingInsight[];
  options?: Partial<SynthesisOptions>;
}

/** A new insight, ready to store (spec 01 Insight fields plus mention_count, DESIGN.md section 5). */
export interface InsightDraft {
  title: string;
  description: string;
  insight_type: InsightType;
  severity: Severity;
  /** 3–5 verbatim, grounded quotes (fewer only when the cluster has fewer distinct mentions). */
  quotes: Quote[];
  source_ids: string[];
  /** Distinct sources. */
  frequency: number;
  /** Distinct mentions (units: survey answers, transcript turns, comments). */
  mention_count: number;
  /**
   * Distinct mentions per source id (their sum is `mention_count`). A later synthesis of the same sources merging into
   * the stored insight replaces a source's count instead of adding it again (core/insight/synthesis.ts).
   */
  mentions_by_source: Record<string, number>;
  /** Unit-length centroid of its mentions (embedder `embedder_id`), for search and later merges. */
  vector: Float32Array;
  embedder_id: string;
  /** Mean cosine of its mentions to the centroid (0..1): how tight the theme is, a confidence signal. */
  cohesion: number;
  /** The top keyphrases the title and description were built from. */
  keyphrases: string[];
  /** Id of an existing insight this one duplicates: the caller merges into it instead of creating a new one. */
  merge_into?: string;
}

export interface SynthesisStats {
  sources: number;
  units: number;
  /** Mentions after the unit-level filters. */
  mentions: number;
  /** Dropped by the source filters (whole units) and the corpus filters (mentions), by reason. */
  dropped: { interviewer_units: number; structured_answer_units: number; boilerplate: number; duplicate: number };
  clustered: number;
  noise: number;
  clusters_initial: number;
  clusters_final: number;
  /** Clusters dropped because no phrase is shared by enough of their mentions. */
  clusters_unnamed: number;
  vectors_reused: number;
  vectors_computed: number;
  quotes_proposed: number;
  quotes_grounded: number;
  timings_ms: { mentions: number; embed: number; cluster: number; name: number; total: number };
}

export interface SynthesisOutput {
  insights: InsightDraft[];
  summary: string;
  stats: SynthesisStats;
}
