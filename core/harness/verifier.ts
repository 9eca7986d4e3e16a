/**
 * The independent verifier (issue #21; spec 02 `harness_verifier`): it re-reads the workspace from the table and
 * the sources' stored texts (never the run's own notes, tool results or the pre-flight snapshot) and checks every
 * claim a run makes:
 *
 * - every cited id resolves to an item of this workspace (of the kind named, when one is named);
 * - every quote is verbatim (whitespace, quote styles and case aside) in the extracted text of the source it is
 *   attributed to: the source its statement cites, or the sources of the insight it cites; in a document, the
 *   sources of the insight its `[In]` reference names; an insight's own quotes in its own sources;
 * - every count is true: totals of sources (by type, by status), insights, recommendations and documents; an
 *   insight's number of sources; a source's number of mentions; a synthesized insight's `frequency` equals its
 *   distinct sources;
 * - every insight a recommendation addresses exists.
 *
 * It also returns the synchronous trust checks of `validation_sync` (citations, cross-source support, severity).
 */
import { db } from "../db/service";
import { getAll } from "../db/bulk";
import { documentsOf } from "../document/listing";
import { readExtraction } from "../research";
import { withContent } from "../document";
import { citedIds, normalise, quoteKey, statementsOf, type CitedId, type CountClaim, type QuoteClaim, type Statement } from "./claims";
import pLimit from "p-limit";

/** What the verifier is asked to check: an answer and the ids of what the run produced (all re-read here). */
export interface VerifyInput {
  workspaceId: string;
  text: string;
  insightIds?: string[];
  recommendationIds?: string[];
  documentIds?: string[];
  /** Insights a run proposed but did not write (a queued create_insight): their quotes are checked too. */
  proposedInsights?: { title: string; quotes: { text: string; source_id: string }[] }[];
  /** Text an answer may quote without a source: the user's own words (a prompt it echoes). */
  allowedQuotes?: string[];
  /**
   * The workspace's texts as this run's pre-flight read them (core/harness/profile.ts `WorkspaceSnapshot.texts`,
   * normalised): a quote attributed to nothing is looked up there first, and the workspace is read fresh only for a
   * quote not found in them (a text written since).
   */
  snapshotTexts?: readonly string[];
}

/** The `validation_sync` payload (spec 02: citations, cross-source, severity). */
export interface ValidationSync {
  citations: { total: number; resolved: number; unresolved: string[] };
  cross_source: { insights: number; multi_source: number; single_source: number; ratio: number | null };
  severity: { checked: number; unsupported: { insight_id: string; severity: string; sources: number; mentions: number }[] };
}

/** A failed claim, precise enough to repair. */
export type VerifierFailure =
  | { kind: "unresolved_id"; id: string; cited_as: CitedId["kind"]; statement?: number }
  | { kind: "quote_not_verbatim"; quote: string; source_ids: string[]; statement?: number; target?: string }
  | { kind: "count_false"; claim: CountClaim; actual: number; statement?: number; target?: string }
  | { kind: "unknown_addressed_insight"; target: string; id: string };

/** The `harness_verifier` payload, with what the repair and the RQS need. */
export interface VerifierResult {
  passed: boolean;
  /** Share of claims that hold, 0..1 (1 when there was nothing to check). */
  score: number;
  issues: string[];
  feedback: string;
  claims: number;
  failures: VerifierFailure[];
  /** Statement indices whose claims all hold and that made at least one (grounded statements). */
  grounded: number[];
  statements: number;
  /** Artifact insights with at least one quote found verbatim, and how many were checked. */
  artifactQuotes: { insights: number; grounded: number };
  validation: ValidationSync;
}

type InsightRow = { id: string; title: string; quotes: { text: string; source_id: string }[]; source_ids: string[]; frequency: number; mention_count: number; severity: string; origin?: string };
type SourceRow = { id: string; source_type: string; processing_status: string; unit_count?: number };

/** Parallel S3 reads of source texts at most. */
const TEXT_READS = 8;

/**
 * Items by id (BatchGetItem through `getAll`), strongly consistent; missing ids are simply absent. Keys DynamoDB leaves
 * unprocessed are asked again until read: counted as missing, they would fail a citation that is right.
 * @throws AppError SERVICE_UNAVAILABLE (503) when keys stay unprocessed through `getAll`'s tries
 */
async function getMany<T>(entity: "insight" | "recommendation" | "document" | "researchSource" | "pendingAction", workspaceId: string, ids: string[], attributes?: string[]): Promise<Map<string, T>> {
  const e = db().entities[entity] as unknown as { get(k: unknown[]): { go(o: unknown): Promise<{ data: (T & { id: string })[]; unprocessed: unknown[] }> } };
  const keys = [...new Set(ids)].map((id) => ({ workspace_id: workspaceId, id }));
  const rows = await getAll(keys, (k) => e.get(k).go({ consistent: true, ...(attributes ? { attributes } : {}) }));
  return new Map(rows.map((row) => [row.id, row]));
}

const INSIGHT_ATTRS = ["id", "title", "quotes", "source_ids", "frequency", "mention_count", "severity", "origin"];
const SOURCE_ATTRS = ["id", "source_type", "processing_status", "unit_count"];

/** Distinct sources an insight rests on: its source ids and its quotes' sources. */
const distinctSources = (i: InsightRow) => new Set([...(i.source_ids ?? []), ...(i.quotes ?? []).map((q) => q.source_id)]).size;

/** A document's claims: statements of its content, with `[In]` references resolved to insight ids by its link definitions. */
function documentStatements(content: string): { statements: Statement[]; refs: Map<string, string> } {
  const refs = new Map<string, string>();
  for (const m of content.matchAll(/^\[(I\d+)\]:\s*#insight-([0-9a-f-]{36})/gim)) refs.set(m[1]!.toUpperCase(), m[2]!.toLowerCase());
  const statements = statementsOf(content).map((s) => {
    const ref = /\[(I\d+)\]/i.exec(s.text)?.[1]?.toUpperCase();
    const insightId = ref ? refs.get(ref) : undefined;
    const ids: CitedId[] = [...s.ids, ...(insightId ? [{ kind: "insight" as const, id: insightId }] : [])];
    const quotes: QuoteClaim[] = [...s.text.matchAll(/“([^“”]+)”/g)]
      .map((m) => m[1]!.trim())
      .filter((q) => q.split(/\s+/).length >= 4)
      .map((text) => ({ text, ...(insightId ? { insightId } : {}) }));
    // "- [I1] Title — pain point, high, 2 sources, 3 mentions": the insight's number of sources.
    const n = /—[^—]*\b(\d+) sources?\b/.exec(s.text);
    const counts: CountClaim[] = insightId && n && /^-\s*\[I\d+\]/.test(s.text) ? [{ what: "insight_sources", insightId, n: Number(n[1]) }] : [];
    return { ...s, ids, quotes, counts };
  });
  return { statements, refs };
}

/**
 * Verify a run's claims against the table (see the file's header).
 * @returns passed (every claim holds), score (share of claims that hold), issues, feedback in one sentence, the
 *   failures, the grounded statements of the answer and the validation_sync figures
 */
export async function verify(input: VerifyInput): Promise<VerifierResult> {
  const ws = input.workspaceId;
  const answer = statementsOf(input.text);
  const docs = await getMany<{ id: string; document_type: string; content: string; content_ref?: unknown; workspace_id: string; metadata?: unknown }>("document", ws, input.documentIds ?? []);
  // A document may quote the instructions it was drafted with (the engines quote them in a note).
  const docAllowed = [...docs.values()].flatMap((d) => {
    const m = (d.metadata ?? {}) as { user_instructions?: unknown; harness_repair?: { instructions?: unknown } };
    return [m.user_instructions, m.harness_repair?.instructions].filter((x): x is string => typeof x === "string");
  });
  const docClaims = await Promise.all(
    [...docs.values()].map(async (d) => ({ id: d.id, ...documentStatements((await withContent(d as never)).content) })),
  );
  const cited = citedIds([...answer, ...docClaims.flatMap((d) => d.statements)]);
  const byKind = (k: CitedId["kind"]) => cited.filter((c) => c.kind === k || c.kind === "any").map((c) => c.id);

  // The workspace's totals the answer states, read while the rest is.
  const countClaims = [...answer.map((s) => ({ scope: "answer", s })), ...docClaims.flatMap((d) => d.statements.map((s) => ({ scope: `doc:${d.id}`, s })))].flatMap(({ scope, s }) =>
    s.counts.map((claim) => ({ scope, statement: s.index, claim })),
  );
  const counting = totalsFor(ws, countClaims.map((c) => c.claim));
  counting.catch(() => undefined); // awaited below; a failure must not count as unhandled meanwhile

  // Everything the claims name, read fresh.
  const artifactInsightIds = input.insightIds ?? [];
  const recs = await getMany<{ id: string; title: string; addresses_insight_ids: string[] }>("recommendation", ws, [...byKind("recommendation"), ...(input.recommendationIds ?? [])], ["id", "title", "addresses_insight_ids"]);
  const addressed = [...recs.values()].filter((r) => (input.recommendationIds ?? []).includes(r.id)).flatMap((r) => r.addresses_insight_ids ?? []);
  const [insights, sources, otherDocs, pending] = await Promise.all([
    getMany<InsightRow>("insight", ws, [...byKind("insight"), ...artifactInsightIds, ...addressed], INSIGHT_ATTRS),
    getMany<SourceRow>("researchSource", ws, byKind("source"), SOURCE_ATTRS),
    getMany<{ id: string }>("document", ws, byKind("document").filter((id) => !docs.has(id)), ["id"]),
    getMany<{ id: string }>("pendingAction", ws, byKind("pending_action"), ["id"]),
  ]);
  const exists = (c: CitedId) => {
    const has = { insight: insights.has(c.id), source: sources.has(c.id), recommendation: recs.has(c.id), document: docs.has(c.id) || otherDocs.has(c.id), pending_action: pending.has(c.id) };
    return c.kind === "any" ? Object.values(has).some(Boolean) : has[c.kind];
  };

  const failures: VerifierFailure[] = [];
  let claims = 0;
  const failedStatements = new Set<string>();
  const claimedStatements = new Set<string>();
  const mark = (scope: string, statement: number | undefined, ok: boolean) => {
    if (statement === undefined) return;
    claimedStatements.add(`${scope}#${statement}`);
    if (!ok) failedStatements.add(`${scope}#${statement}`);
  };

  // 1. ids
  const checkIds = (scope: string, statements: Statement[]) => {
    for (const s of statements) {
      for (const c of s.ids) {
        claims++;
        const ok = exists(c);
        mark(scope, s.index, ok);
        if (!ok) failures.push({ kind: "unresolved_id", id: c.id, cited_as: c.kind, statement: scope === "answer" ? s.index : undefined });
      }
    }
  };
  checkIds("answer", answer);
  for (const d of docClaims) checkIds(`doc:${d.id}`, d.statements);

  // 2. quotes: the source texts they must be in, read once each.
  const wanted: { quote: string; sourceIds: string[]; scope: string; statement?: number; target?: string; byInsight?: boolean }[] = [];
  const sourcesOfInsight = (id: string | undefined) => {
    const i = id ? insights.get(id) : undefined;
    return i ? [...new Set((i.quotes ?? []).map((q) => q.source_id).concat(i.source_ids ?? []))] : [];
  };
  const collect = (scope: string, statements: Statement[]) => {
    for (const s of statements) {
      for (const q of s.quotes) wanted.push({ quote: q.text, sourceIds: q.sourceId ? [q.sourceId] : sourcesOfInsight(q.insightId), scope, statement: s.index, byInsight: !q.sourceId && !!q.insightId });
    }
  };
  collect("answer", answer);
  for (const d of docClaims) collect(`doc:${d.id}`, d.statements);
  for (const id of artifactInsightIds) {
    const i = insights.get(id);
    for (const q of i?.quotes ?? []) wanted.push({ quote: q.text, sourceIds: [q.source_id], scope: `insight:${id}`, target: id });
  }
  for (const p of input.proposedInsights ?? []) for (const q of p.quotes) wanted.push({ quote: q.text, sourceIds: [q.source_id], scope: "proposed", target: p.title });
  // A quote attributed to nothing must at least be text of the workspace (a title, an insight's quote or
  // description) or the user's own words: looked up in the pre-flight's snapshot of those texts, and read fresh only
  // when needed (see below) and not found there.
  const extra = [...(input.allowedQuotes ?? []), ...docAllowed];
  const known = input.snapshotTexts ? [...input.snapshotTexts, ...extra.map(normalise)] : undefined;
  let corpus: string[] | undefined;
  const inCorpus = async (key: string) =>
    (known?.some((t) => t.includes(key)) ?? false) || (corpus ??= await workspaceTexts(ws, extra)).some((t) => t.includes(key));
  const textIds = [...new Set(wanted.flatMap((w) => w.sourceIds))];
  const [textSources] = await Promise.all([getMany<SourceRow & { workspace_id: string }>("researchSource", ws, textIds.filter((id) => !sources.has(id)), SOURCE_ATTRS)]);
  for (const [id, s] of textSources) sources.set(id, s);
  const texts = new Map<string, string>();
  await pLimit(TEXT_READS).map(
    textIds.filter((id) => sources.has(id)),
    async (id) => {
      const x = await readExtraction(ws, id);
      texts.set(id, normalise(x?.extracted_text ?? ""));
    },
  );
  const groundedInsights = new Set<string>();
  for (const w of wanted) {
    claims++;
    const key = quoteKey(w.quote);
    // Verbatim in the source it is attributed to; a quote attributed to an insight (or to nothing) may also be a
    // title or a phrase of the workspace (a document quotes its recommendation's and insights' titles in “…”).
    const ok =
      key.length > 0 &&
      (w.sourceIds.some((id) => texts.get(id)?.includes(key)) || ((w.sourceIds.length === 0 || !!w.byInsight) && (await inCorpus(key))));
    mark(w.scope, w.statement, ok);
    if (ok && w.scope.startsWith("insight:")) groundedInsights.add(w.target!);
    if (!ok) failures.push({ kind: "quote_not_verbatim", quote: w.quote, source_ids: w.sourceIds, ...(w.scope === "answer" ? { statement: w.statement } : {}), ...(w.target ? { target: w.target } : {}) });
  }

  // 3. counts
  const { allSources, totals } = await counting;
  for (const { scope, statement, claim } of countClaims) {
    claims++;
    let actual: number | undefined;
    let alt: number | undefined;
    switch (claim.what) {
      case "sources_total":
        actual = allSources.length;
        break;
      case "sources_of_type":
        actual = allSources.filter((s) => s.source_type === claim.type).length;
        break;
      case "sources_with_status":
        actual = allSources.filter((s) => s.processing_status === claim.status).length;
        break;
      case "workspace_total":
        actual = claim.kind === "source" ? allSources.length : totals.get(claim.kind);
        if (claim.kind === "insight") alt = totals.get("insight_active");
        break;
      case "insight_sources": {
        const i = insights.get(claim.insightId);
        // The stored frequency is what an answer reports; a document's Sources line counts quoted sources too.
        actual = i ? (scope.startsWith("doc:") ? Math.max(i.frequency, new Set((i.quotes ?? []).map((q) => q.source_id)).size) : i.frequency) : undefined;
        break;
      }
      case "source_mentions":
        actual = sources.get(claim.sourceId)?.unit_count ?? undefined;
        break;
    }
    const ok = actual === claim.n || alt === claim.n;
    mark(scope, statement, ok);
    if (!ok) failures.push({ kind: "count_false", claim, actual: actual ?? 0, ...(scope === "answer" ? { statement } : {}) });
  }
  // A synthesized insight's frequency is its number of distinct sources (DESIGN.md section 5).
  for (const id of artifactInsightIds) {
    const i = insights.get(id);
    if (!i) {
      claims++;
      failures.push({ kind: "unresolved_id", id, cited_as: "insight" });
      continue;
    }
    if (i.origin !== "synthesis") continue;
    claims++;
    const n = distinctSources(i);
    if (i.frequency !== n) failures.push({ kind: "count_false", claim: { what: "insight_sources", insightId: id, n: i.frequency }, actual: n, target: id });
  }

  // 4. recommendations name insights that exist.
  for (const id of input.recommendationIds ?? []) {
    const r = recs.get(id);
    if (!r) {
      claims++;
      failures.push({ kind: "unresolved_id", id, cited_as: "recommendation" });
      continue;
    }
    for (const a of r.addresses_insight_ids ?? []) {
      claims++;
      if (!insights.has(a)) failures.push({ kind: "unknown_addressed_insight", target: id, id: a });
    }
  }

  const grounded = answer.filter((s) => claimedStatements.has(`answer#${s.index}`) && !failedStatements.has(`answer#${s.index}`)).map((s) => s.index);
  const score = claims ? Math.round(((claims - failures.length) / claims) * 1000) / 1000 : 1;
  const issues = failures.map(describe);
  return {
    passed: failures.length === 0,
    score: Math.max(0, score),
    issues,
    feedback: failures.length ? `${failures.length} of ${claims} claims do not hold against the workspace: ${issues.slice(0, 3).join("; ")}${issues.length > 3 ? "; …" : ""}` : claims ? `All ${claims} claims hold against the workspace.` : "Nothing to verify: the answer makes no checkable claim.",
    claims,
    failures,
    grounded,
    statements: answer.length,
    artifactQuotes: { insights: artifactInsightIds.length, grounded: groundedInsights.size },
    validation: validationOf(cited, exists, [...insights.values()].filter((i) => cited.some((c) => c.id === i.id) || artifactInsightIds.includes(i.id))),
  };
}

/** The workspace totals a set of count claims needs: its sources (by type and status) and the counts of the kinds stated. */
async function totalsFor(ws: string, claims: CountClaim[]) {
  const needsSources = claims.some((c) => c.what.startsWith("sources_") || (c.what === "workspace_total" && c.kind === "source"));
  const totals = new Map<string, number>();
  const kinds = (["insight", "recommendation", "document"] as const).filter((k) => claims.some((c) => c.what === "workspace_total" && c.kind === k));
  const [sources] = await Promise.all([
    needsSources ? db().entities.researchSource.query.byWorkspace({ workspace_id: ws }).go({ pages: "all", attributes: ["id", "source_type", "processing_status"] }) : Promise.resolve({ data: [] }),
    ...kinds.map(async (kind) => {
      const entity = db().entities[kind] as unknown as { query: { byWorkspace(k: unknown): { go(o: unknown): Promise<{ data: { id: string; is_archived?: boolean }[] }> } } };
      const { data } = await entity.query.byWorkspace({ workspace_id: ws }).go({ pages: "all", attributes: kind === "insight" ? ["id", "is_archived"] : ["id"] });
      totals.set(kind, data.length);
      if (kind === "insight") totals.set("insight_active", data.filter((i) => !i.is_archived).length);
    }),
  ]);
  return { allSources: sources.data as { id: string; source_type: string; processing_status: string }[], totals };
}

/** The workspace's own short texts (titles, insight quotes and descriptions), normalised, plus `extra`. */
async function workspaceTexts(workspaceId: string, extra: string[]): Promise<string[]> {
  const e = db().entities;
  const [sources, insights, recs, docs] = await Promise.all([
    e.researchSource.query.byWorkspace({ workspace_id: workspaceId }).go({ pages: "all", attributes: ["title"] }),
    e.insight.query.byWorkspace({ workspace_id: workspaceId }).go({ pages: "all", attributes: ["title", "description", "quotes"] }),
    e.recommendation.query.byWorkspace({ workspace_id: workspaceId }).go({ pages: "all", attributes: ["title"] }),
    documentsOf(workspaceId, { attributes: ["title"] }),
  ]);
  return [
    ...sources.data.map((s) => s.title ?? ""),
    ...insights.data.flatMap((i) => [i.title ?? "", i.description ?? "", ...(i.quotes ?? []).map((q) => q.text)]),
    ...recs.data.map((r) => r.title ?? ""),
    ...docs.map((d) => d.title ?? ""),
    ...extra,
  ].map(normalise).filter(Boolean);
}

function describe(f: VerifierFailure): string {
  switch (f.kind) {
    case "unresolved_id":
      return `${f.cited_as === "any" ? "Id" : f.cited_as.replace("_", " ").replace(/^./, (c) => c.toUpperCase())} ${f.id} does not resolve in this workspace`;
    case "quote_not_verbatim":
      return f.source_ids.length ? `“${f.quote.slice(0, 160)}” is not verbatim in source ${f.source_ids.join(", ")}` : `“${f.quote.slice(0, 160)}” cites no source and is not found in the workspace`;
    case "count_false":
      return `The count ${f.claim.n} (${f.claim.what.replace(/_/g, " ")}) is false: the workspace has ${f.actual}`;
    case "unknown_addressed_insight":
      return `Recommendation ${f.target} addresses insight ${f.id}, which does not exist`;
  }
}

/** Spec 02 validation_sync: citations resolved, how many insights rest on more than one source, and severities one mention cannot carry. */
function validationOf(cited: CitedId[], exists: (c: CitedId) => boolean, insights: InsightRow[]): ValidationSync {
  const unresolved = cited.filter((c) => !exists(c)).map((c) => c.id);
  const multi = insights.filter((i) => distinctSources(i) >= 2).length;
  const unsupported = insights
    .filter((i) => (i.severity === "high" || i.severity === "critical") && distinctSources(i) <= 1 && (i.mention_count ?? 1) <= 1)
    .map((i) => ({ insight_id: i.id, severity: i.severity, sources: distinctSources(i), mentions: i.mention_count ?? 1 }));
  return {
    citations: { total: cited.length, resolved: cited.length - unresolved.length, unresolved },
    cross_source: { insights: insights.length, multi_source: multi, single_source: insights.length - multi, ratio: insights.length ? Math.round((multi / insights.length) * 1000) / 1000 : null },
    severity: { checked: insights.length, unsupported },
  };
}
