/**
 * Post-flight contracts, one per workflow type (issue #21; spec 02 `harness_contract`). A contract judges the FORM
 * of what a run produced, from the artifacts as stored and the answer as written; whether its claims are TRUE is the
 * verifier's (./verifier.ts). Each rule applied to each artifact is one check; the score is the share of checks
 * passed and the contract passes when all do. Every failed check names its target, so the repair (./repair.ts) can
 * fix exactly that point.
 *
 * - insights (synthesis, and create_insight writes a chat queues): at least one quote, each naming its source; a title
 *   that is a sentence from the evidence: not one of the keyphrase templates ("Users struggle with …"), no redaction
 *   marker, and at least half its content words found in the insight's own quotes and description;
 * - recommendations (generation, create_recommendation writes): they name the insights they address;
 * - documents (drafting): the type's required sections (a PRD: problem, evidence, solution, goals & success metrics)
 *   and at least one cited insight; no redaction marker;
 * - the answer (chat, missions, and every stream's report): not empty; an answer drawn from evidence (the run read
 *   insights or sources) cites at least one id; every block quote (`> …`) cites its source or insight.
 */
import { isStockTitle, REDACTION_RE } from "../ai/synthesis/markers";
import { statementsOf } from "./claims";

/** What a judged run is, for its contract (spec 02 harness_contract `workflow_type`). */
export type JudgedWorkflow = "chat" | "mission" | "synthesis" | "recommendation" | "drafting" | "pipeline";

/** An insight as the contract reads it. */
export interface InsightArtifact {
  id?: string;
  title: string;
  description: string;
  quotes: { text: string; source_id?: string | null }[];
}
export interface RecommendationArtifact {
  id?: string;
  title: string;
  addresses_insight_ids: string[];
}
export interface DocumentArtifact {
  id: string;
  document_type: string;
  content: string;
}

/** Everything a run produced, as stored (and the answer it gave). */
export interface RunArtifacts {
  text: string;
  /** The run read insights or sources (an evidence tool returned items, or it synthesized): its answer must cite. */
  evidenceUsed: boolean;
  insights: InsightArtifact[];
  recommendations: RecommendationArtifact[];
  documents: DocumentArtifact[];
}

/** A failed check, precise enough to repair. */
export type ContractFailure =
  | { kind: "empty_answer" }
  | { kind: "uncited_answer" }
  | { kind: "uncited_quote"; line: string }
  | { kind: "no_quotes"; target: string }
  | { kind: "quote_without_source"; target: string }
  | { kind: "stock_title"; target: string; title: string }
  | { kind: "redacted_title"; target: string; title: string }
  | { kind: "title_not_from_evidence"; target: string; title: string }
  | { kind: "names_no_insight"; target: string }
  | { kind: "missing_section"; target: string; section: string }
  | { kind: "cites_no_insight"; target: string }
  | { kind: "redaction_in_document"; target: string };

/** The `harness_contract` payload, with the failures behind its issues. */
export interface ContractResult {
  passed: boolean;
  /** Share of checks passed, 0..1. */
  score: number;
  issues: string[];
  workflow_type: JudgedWorkflow;
  failures: ContractFailure[];
  checks: number;
}

/** Sections each document type must have (heading patterns), the PRD's from spec 01 document types. */
export const REQUIRED_SECTIONS: Record<string, { name: string; re: RegExp }[]> = {
  prd: [
    { name: "Problem", re: /problem|background|context/i },
    { name: "Evidence", re: /evidence|what we heard|research/i },
    { name: "Solution", re: /solution|proposal|requirements/i },
    { name: "Goals & success metrics", re: /metric|success|goals?\b/i },
  ],
  spec: [
    { name: "Background", re: /background|overview|context|problem/i },
    { name: "Requirements", re: /requirements|solution/i },
  ],
  memo: [
    { name: "Context", re: /context|problem|summary/i },
    { name: "Proposal", re: /proposal|recommendation|solution/i },
  ],
  user_story: [{ name: "User stories", re: /user stor/i }],
  roadmap_update: [
    { name: "Roadmap", re: /roadmap|now|next/i },
    { name: "Why", re: /why|what we heard|evidence/i },
  ],
  release_notes: [{ name: "What's new", re: /what'?s new|changes|release/i }],
};

const STOP = new Set(
  "a an the to of for on in at by with from and or but as is are be been it its this that these those we our us you your i me my they them their he she his her not no do does did have has had can cannot can't could would should will just very more most so too than then there here when where which what who how why about into over under after before all any some each every only also users user people".split(" "),
);
const stem = (w: string) => w.replace(/(ing|ed|es|s)$/, "");
const contentWords = (s: string) => s.toLowerCase().split(/[^a-z0-9']+/).filter((w) => w.length >= 3 && !STOP.has(w)).map(stem);

/** Share of a title's content words found in its evidence (quotes and description), 0..1 (1 for a title of none). */
export function titleEvidenceShare(insight: InsightArtifact): number {
  const words = contentWords(insight.title);
  if (!words.length) return 1;
  const evidence = new Set(contentWords([insight.description, ...insight.quotes.map((q) => q.text)].join(" ")));
  return words.filter((w) => evidence.has(w)).length / words.length;
}
/** At least this share of a title's content words must come from its evidence. */
export const MIN_TITLE_EVIDENCE = 0.5;

const label = (a: { id?: string; title?: string }) => (a.id ? `${a.title ? `"${a.title.slice(0, 80)}" ` : ""}(${a.id})` : `"${(a.title ?? "").slice(0, 80)}"`);

/** Check one insight; pushes its failures, returns its number of checks. */
function checkInsight(i: InsightArtifact, failures: ContractFailure[]): number {
  const target = i.id ?? i.title;
  if (!i.quotes.length) failures.push({ kind: "no_quotes", target });
  else if (i.quotes.some((q) => !q.source_id)) failures.push({ kind: "quote_without_source", target });
  if (isStockTitle(i.title)) failures.push({ kind: "stock_title", target, title: i.title });
  else if (i.quotes.length && titleEvidenceShare(i) < MIN_TITLE_EVIDENCE) failures.push({ kind: "title_not_from_evidence", target, title: i.title });
  if (REDACTION_RE.test(i.title)) failures.push({ kind: "redacted_title", target, title: i.title });
  return 3;
}

/** Check the answer; pushes its failures, returns its number of checks. */
function checkAnswer(a: RunArtifacts, failures: ContractFailure[]): number {
  const statements = statementsOf(a.text);
  if (!a.text.trim()) {
    failures.push({ kind: "empty_answer" });
    return 1;
  }
  let checks = 1;
  if (a.evidenceUsed) {
    checks++;
    if (!statements.some((s) => s.ids.length > 0)) failures.push({ kind: "uncited_answer" });
  }
  for (const s of statements) {
    if (!/^>/.test(s.text)) continue;
    checks++;
    if (!s.ids.some((i) => i.kind === "source" || i.kind === "insight")) failures.push({ kind: "uncited_quote", line: s.text.slice(0, 200) });
  }
  return checks;
}

/** The words a failure is reported with (spec 02 harness_contract `issues`). */
export function describeFailure(f: ContractFailure, byId: Map<string, { title?: string; id?: string }> = new Map()): string {
  const t = (id: string) => label(byId.get(id) ?? { id });
  switch (f.kind) {
    case "empty_answer":
      return "The answer is empty";
    case "uncited_answer":
      return "The answer draws on insights or sources but cites none of them";
    case "uncited_quote":
      return `A quoted passage cites no source or insight: ${f.line}`;
    case "no_quotes":
      return `Insight ${t(f.target)} carries no verbatim quote of a source`;
    case "quote_without_source":
      return `Insight ${t(f.target)} has a quote that names no source`;
    case "stock_title":
      return `Insight ${t(f.target)} is titled with a stock prefix over keywords ("${f.title}"), not a sentence from the evidence`;
    case "redacted_title":
      return `Insight ${t(f.target)} has a redaction marker in its title ("${f.title}")`;
    case "title_not_from_evidence":
      return `Insight ${t(f.target)}'s title ("${f.title}") is not drawn from its evidence`;
    case "names_no_insight":
      return `Recommendation ${t(f.target)} names no insight it addresses`;
    case "missing_section":
      return `Document ${t(f.target)} lacks the required section "${f.section}"`;
    case "cites_no_insight":
      return `Document ${t(f.target)} cites no insight`;
    case "redaction_in_document":
      return `Document ${t(f.target)} carries a redaction marker`;
  }
}

/**
 * Judge a run's artifacts and answer against its workflow's contract (see the file's header).
 * @returns passed (every check), score (share of checks passed, 0..1, 3 decimals), issues in words, failures
 */
export function checkContract(workflow: JudgedWorkflow, a: RunArtifacts): ContractResult {
  const failures: ContractFailure[] = [];
  let checks = checkAnswer(a, failures);
  for (const i of a.insights) checks += checkInsight(i, failures);
  for (const r of a.recommendations) {
    checks++;
    if (!r.addresses_insight_ids.length) failures.push({ kind: "names_no_insight", target: r.id ?? r.title });
  }
  for (const d of a.documents) {
    const headings = [...d.content.matchAll(/^#{2,3}\s+(.+)$/gm)].map((m) => m[1]!);
    for (const section of REQUIRED_SECTIONS[d.document_type] ?? []) {
      checks++;
      if (!headings.some((h) => section.re.test(h))) failures.push({ kind: "missing_section", target: d.id, section: section.name });
    }
    checks += 2;
    if (!/\[I\d+\]|#insight-[0-9a-f-]{36}|\[insight [0-9a-f-]{36}\]/i.test(d.content)) failures.push({ kind: "cites_no_insight", target: d.id });
    if (REDACTION_RE.test(d.content)) failures.push({ kind: "redaction_in_document", target: d.id });
  }
  // Stored artifacts by id; writes only queued (no id yet) by their title, as their failures name them.
  const byId = new Map<string, { title?: string; id?: string }>([
    ...a.insights.map((i) => [i.id ?? i.title, i] as const),
    ...a.recommendations.map((r) => [r.id ?? r.title, r] as const),
    ...a.documents.map((d) => [d.id, { id: d.id }] as const),
  ]);
  const score = checks ? Math.round(((checks - failures.length) / checks) * 1000) / 1000 : 1;
  return { passed: failures.length === 0, score: Math.max(0, score), issues: failures.map((f) => describeFailure(f, byId)), workflow_type: workflow, failures, checks };
}
