/**
 * Source- and corpus-level mention filters of synthesis (the unit-level ones live in mentions.ts).
 *
 * - Interviewer speakers: in a source with transcript turns from two or more speakers (10+ sentences each), a
 *   speaker asks, the other answers about themselves. Score = share of question sentences / share of first-person
 *   sentences (floored at 0.05). A speaker with at least 8% questions and at least twice the lowest score (or whose
 *   name says interviewer/moderator/facilitator/host) is an interviewer; their turns are prompts, not evidence.
 * - Multiple-choice survey columns: answers to one question (fields.question), at least 10 of them, where
 *   fewer than 30% of the answers are distinct, or where the answers are lists (split at "," and ";") whose items
 *   are fewer than 30% distinct: single choices ("Daily", "Yes"), multiple selections ("simple;cool;quick") and
 *   tag columns ("Login, Performance"), not free text. Also name-list columns: at least 20 answers, median length
 *   of 2 words or fewer and 70% of answers of 3 words or fewer (roles, industries, tool names): these are
 *   counts to tabulate, not statements to synthesise.
 * - Closed survey questions (survey.ts `closedColumnHeaders`: single choice, multi-select, rating, ranking), whose
 *   figures become quantitative insights instead, and any unit holding a "[option]: n" rank pair (a rank cell, or a
 *   row of a ranking export): numbers are never evidence in someone's words (issue #11).
 * - Boilerplate: the same text (normalised, 6+ words) in two or more sources is a template (a conversation guide
 *   pasted in every session's notes).
 * - Duplicates: the same text twice from one speaker of one source counts once.
 */
import type { TextUnit } from "../../extract/types";
import { normalizeText } from "./mentions";
import { closedColumnHeaders, isFigureText } from "./survey";

const INTERVIEWER_NAME = /\b(interviewer|moderator|facilitator|researcher|host)\b/i;

const FIRST_PERSON = /\b(i|i'm|i've|i'd|me|my|mine)\b/i;

function sentences(text: string): string[] {
  return text.split(/(?<=[.!?])\s+/).filter((s) => s.trim().length > 0);
}

/** Speakers of a source's `turn` units who act as interviewer (see file comment). */
export function interviewerSpeakers(units: TextUnit[]): Set<string> {
  const stats = new Map<string, { sent: number; q: number; self: number }>();
  for (const u of units) {
    if (u.kind !== "turn" || !u.speaker) continue;
    const st = stats.get(u.speaker) ?? { sent: 0, q: 0, self: 0 };
    for (const s of sentences(u.text)) {
      st.sent++;
      if (s.trim().endsWith("?")) st.q++;
      if (FIRST_PERSON.test(s)) st.self++;
    }
    stats.set(u.speaker, st);
  }
  const active = [...stats.entries()].filter(([, v]) => v.sent >= 10);
  const out = new Set<string>();
  if (active.length < 2) return out;
  const score = (v: { sent: number; q: number; self: number }) => v.q / v.sent / Math.max(0.05, v.self / v.sent);
  const minScore = Math.min(...active.map(([, v]) => score(v)));
  for (const [name, v] of active) {
    if (INTERVIEWER_NAME.test(name) || (v.q / v.sent >= 0.08 && score(v) >= 2 * minScore)) out.add(name);
  }
  // Never drop everyone.
  if (out.size === active.length) return new Set([...out].filter((n) => INTERVIEWER_NAME.test(n)));
  return out;
}

/** Survey questions (fields.question) of a source whose answers are choices or name lists, not free text (see file comment). */
export function structuredQuestions(units: TextUnit[]): Set<string> {
  const byQ = new Map<string, string[]>();
  for (const u of units) {
    const q = u.fields?.question;
    if (u.kind !== "response" || !q) continue;
    const list = byQ.get(q) ?? [];
    list.push(u.text);
    byQ.set(q, list);
  }
  const out = closedColumnHeaders(units);
  for (const [q, answers] of byQ) {
    if (answers.length < 10) continue;
    const distinct = new Set(answers.map((a) => normalizeText(a))).size;
    const items = answers.flatMap((a) => a.split(/[,;]/).map(normalizeText).filter(Boolean));
    const distinctItems = new Set(items).size;
    const words = answers.map((a) => a.split(/\s+/).filter(Boolean).length).sort((a, b) => a - b);
    const median = words[Math.floor(words.length / 2)];
    const short = words.filter((w) => w <= 3).length / words.length;
    if (
      distinct / answers.length < 0.3 ||
      (items.length >= answers.length * 1.2 && distinctItems / items.length < 0.3) ||
      (answers.length >= 20 && median <= 2 && short >= 0.7)
    ) {
      out.add(q);
    }
  }
  return out;
}

/** Why a unit is skipped as a whole, or null to keep it. */
export function unitSkipReason(
  unit: TextUnit,
  interviewers: Set<string>,
  choices: Set<string>,
): "interviewer" | "structured_answer" | null {
  if (unit.kind === "turn" && unit.speaker && interviewers.has(unit.speaker)) return "interviewer";
  if (unit.kind === "response" && unit.fields?.question && choices.has(unit.fields.question)) return "structured_answer";
  if (unit.fields?.closed || ((unit.kind === "response" || unit.kind === "row") && isFigureText(unit.text))) return "structured_answer";
  return null;
}

/**
 * Normalised texts (6+ words) that occur in two or more different sources.
 * @param mentions normalised text and source id of every mention
 */
export function boilerplateTexts(mentions: { norm: string; sourceId: string }[]): Set<string> {
  const where = new Map<string, Set<string>>();
  for (const m of mentions) {
    if (m.norm.split(" ").length < 6) continue;
    const s = where.get(m.norm) ?? new Set<string>();
    s.add(m.sourceId);
    where.set(m.norm, s);
  }
  const out = new Set<string>();
  for (const [t, s] of where) if (s.size >= 2) out.add(t);
  return out;
}
