/**
 * Reconciliation of a newly extracted fact against the user's current facts (DESIGN.md 6.6), the same for every
 * engine: like mem0's ADD / UPDATE / DELETE / NONE, with Graphiti's rule that a contradicted fact is invalidated, not
 * deleted. Pure: it decides, core/memory/learn.ts writes.
 *
 * Candidates are the current facts nearest by vector similarity (cosine at least NEIGHBOUR_MIN, at most NEIGHBOURS
 * of them) together with every current fact of the same subject, and every fact of the subject's family naming a
 * value the new fact says it replaces, whatever their similarity: the extractor's subject and the user's own words
 * are stronger evidence than the vectors ("Our users are students" and "Our users are hospital IT admins" share
 * little vocabulary and one subject). Then, in order:
 *
 * 1. same: a candidate already says it (the same text; or the same subject and value; or a near-identical sentence,
 *    cosine ≥ SAME_MIN, with the same numbers and the same polarity). Nothing is stored twice.
 * 2. changed: the user says something changed ("actually", "switched from X to Y", "no longer") and a candidate of
 *    the same subject (or naming a value it replaces, or of the same subject family and cosine ≥ CHANGE_MIN) holds
 *    another value; or both are dynamic facts of one single-valued subject (newer dated context replaces older).
 *    Those candidates are superseded: kept as history with the time they stopped being true.
 * 3. contradicting: a candidate of the same single-valued subject holds another value, from another message, and
 *    nothing says which is right. Both stay current and are flagged as disagreeing.
 * 4. new: anything else (a multi-valued subject takes another value this way).
 */
import { dot } from "../ai/vectors";
import type { ExtractedFact } from "./types";

/** Nearest facts looked at, beyond those of the same subject. */
export const NEIGHBOURS = 8;
/** Cosine below which a fact is not a neighbour. */
export const NEIGHBOUR_MIN = 0.5;
/** Cosine at or above which two sentences with the same numbers and polarity say the same thing. */
export const SAME_MIN = 0.95;
/** Cosine at or above which a change names, without a shared subject, the fact of its subject family it replaces. */
export const CHANGE_MIN = 0.8;

/** A current fact as reconciliation sees it. */
export interface KnownFact {
  id: string;
  content: string;
  kind: "static" | "dynamic";
  subject: string;
  value: string;
  multi: boolean;
  source_message_id: string;
  /** When it was stated (ISO 8601); absent on facts handed in without it (taken as older than any statement). */
  valid_at?: string;
  vector: Float32Array;
}

/** A new fact with its vector and the message that stated it. */
export interface IncomingFact extends ExtractedFact {
  vector: Float32Array;
  source_message_id: string;
}

/** What becomes of an incoming fact. */
export type Decision =
  /** Already known as `existing`; any of `supersedes` it confirms wrong are superseded by `existing`. */
  | { action: "same"; existing: string; supersedes: string[] }
  /** Stored; `supersedes` are kept as history, superseded by it. */
  | { action: "changed"; supersedes: string[] }
  /** Stored; it and `contradicts` disagree, all stay current and flagged. */
  | { action: "contradicting"; contradicts: string[] }
  /** Stored. */
  | { action: "new" };

/** The sentence reduced for equality: lower case, words only. */
const plain = (s: string) => s.toLowerCase().replace(/[^a-z0-9%$€£]+/g, " ").trim();
const numbersOf = (s: string) => [...s.matchAll(/\d[\d,.]*/g)].map((m) => m[0].replace(/[,.]$/, "")).sort().join("|");
const negated = (s: string) => /\b(?:not|no longer|never|don't|doesn't|isn't|aren't|won't|can't|stopped|dropped)\b|n't\b/i.test(s);
/** The subject's family: "tool" for "tool:jira" and "tool.for:analytic", "team" for "team.size". */
const familyOf = (subject: string) => subject.split(/[.:]/)[0]!;

/**
 * Two subjects are the same slot when they are equal, or when both are tool purposes ("tool.for:<stems>") sharing a
 * stem ("tool.for:analytic" and "tool.for:analytic-product": one job, one tool).
 */
export function sameSubject(a: string, b: string): boolean {
  if (a === b) return true;
  const pa = /^tool\.for:(.+)$/.exec(a);
  const pb = /^tool\.for:(.+)$/.exec(b);
  if (!pa || !pb) return false;
  const sb = new Set(pb[1]!.split("-"));
  return pa[1]!.split("-").some((s) => sb.has(s));
}

/** True when `fact` names one of the replaced values as a whole word (its value, its subject or its sentence). */
function names(fact: KnownFact, replaced: string[]): boolean {
  const haystack = ` ${plain(`${fact.value} ${fact.subject.replace(/[:.+-]/g, " ")} ${fact.content}`)} `;
  return replaced.some((r) => {
    const needle = plain(r);
    return needle.length > 1 && haystack.includes(` ${needle} `);
  });
}

/**
 * Decide what becomes of `fact` given the user's current facts in the workspace (see the file's header).
 * @param current the current (not superseded) facts, each with its unit-length vector of the embedder that made
 *   `fact.vector`
 */
export function reconcile(fact: IncomingFact, current: readonly KnownFact[]): Decision {
  const scored = current.map((c) => ({ c, sim: dot(c.vector, fact.vector) }));
  const nearest = scored
    .filter((s) => s.sim >= NEIGHBOUR_MIN)
    .sort((a, b) => b.sim - a.sim)
    .slice(0, NEIGHBOURS);
  const candidates = new Map(nearest.map((s) => [s.c.id, s]));
  for (const s of scored) if (sameSubject(s.c.subject, fact.subject)) candidates.set(s.c.id, s);
  const all = [...candidates.values()];

  const slot = all.filter((s) => sameSubject(s.c.subject, fact.subject));
  const sameValue = slot.find((s) => s.c.value === fact.value);
  const differing = slot.filter((s) => s.c.value !== fact.value);
  // The user named what it replaces: every current fact of the family naming it, however far its vector.
  const replaced = fact.replaces.length ? scored.filter((s) => familyOf(s.c.subject) === familyOf(fact.subject) && names(s.c, fact.replaces)) : [];

  // 1. Already known.
  const sameText = all.find((s) => plain(s.c.content) === plain(fact.content));
  const nearDuplicate = all.find(
    (s) => s.sim >= SAME_MIN && numbersOf(s.c.content) === numbersOf(fact.content) && negated(s.c.content) === negated(fact.content) && (!slot.length || sameSubject(s.c.subject, fact.subject)),
  );
  const known = sameText ?? sameValue ?? nearDuplicate;
  if (known) {
    // A correction that restates one side of a disagreement settles it: the others of its subject are superseded.
    const settled = fact.change && !fact.multi ? [...new Set([...differing.map((s) => s.c.id), ...replaced.map((s) => s.c.id)])].filter((id) => id !== known.c.id) : [];
    return { action: "same", existing: known.c.id, supersedes: settled };
  }

  // 2. Changed.
  if (fact.change) {
    let targets = [...(fact.multi ? [] : differing), ...replaced];
    if (targets.length === 0) {
      const near = nearest.find((s) => familyOf(s.c.subject) === familyOf(fact.subject) && s.sim >= CHANGE_MIN && !s.c.multi);
      if (near) targets = [near];
    }
    if (targets.length) return { action: "changed", supersedes: [...new Set(targets.map((s) => s.c.id))] };
  }
  if (replaced.length && !fact.multi) return { action: "changed", supersedes: [...new Set(replaced.map((s) => s.c.id))] };
  if (!fact.multi && fact.kind === "dynamic" && differing.length && differing.every((s) => s.c.kind === "dynamic")) {
    return { action: "changed", supersedes: differing.map((s) => s.c.id) };
  }

  // 3. Two sources disagree (one message stating two values is not a disagreement between sources).
  const disagreeing = fact.multi ? [] : differing.filter((s) => !s.c.multi && s.c.source_message_id !== fact.source_message_id);
  if (disagreeing.length) return { action: "contradicting", contradicts: disagreeing.map((s) => s.c.id) };

  // 4. New.
  return { action: "new" };
}

/**
 * A decision put in the order things were said, for a statement learned after newer ones (an exchange the outbox
 * re-sent, or one retried behind later jobs of its queue group): what was said later stays current.
 * - Candidates to supersede stated after `at` are left current.
 * - When such a newer candidate was to be replaced by this "changed" fact, the fact itself is history: it stopped
 *   being true when the earliest of them was stated (`history`), while the older candidates are still superseded by
 *   it (at `at`), so the record reads in time order: older, this fact, newer.
 * @param at when the incoming fact was stated (ISO 8601)
 * @returns the decision with only older candidates superseded, and `history` when the fact is stored as history
 */
export function inTimeOrder(decision: Decision, at: string, current: readonly KnownFact[]): { decision: Decision; history?: { by: string; at: string } } {
  if (decision.action !== "changed" && decision.action !== "same") return { decision };
  const saidAt = new Map(current.map((c) => [c.id, c.valid_at]));
  const newer = decision.supersedes.filter((id) => (saidAt.get(id) ?? "") > at);
  if (newer.length === 0) return { decision };
  const supersedes = decision.supersedes.filter((id) => !newer.includes(id));
  if (decision.action === "same") return { decision: { ...decision, supersedes } };
  const first = newer.map((id) => ({ by: id, at: saidAt.get(id)! })).sort((a, b) => a.at.localeCompare(b.at) || a.by.localeCompare(b.by))[0]!;
  return { decision: { action: "changed", supersedes }, history: first };
}
