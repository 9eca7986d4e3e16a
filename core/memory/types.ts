import type { FactKind } from "./schema";

/**
 * A fact as an extractor reads it from one user message, before reconciliation (DESIGN.md 6.6). Both extractors
 * (the local rules, core/memory/rules.ts; a model's structured call, core/memory/model-extract.ts) produce this
 * shape, and one reconciliation (core/memory/reconcile.ts) decides what becomes of it.
 */
export interface ExtractedFact {
  /** The fact as it is stored and shown (the user's own sentence for the rules). At most 500 characters. */
  content: string;
  /** static: stable facts about the team, product, users, goals; dynamic: recent, dated context. */
  kind: FactKind;
  /**
   * What it is about, lower case: `team.size`, `product.users`, `tool:mixpanel`, `tool.for:analytic`. Facts of the
   * same subject are reconciled against each other (same value, changed, contradicting).
   */
  subject: string;
  /** Its value for the subject, normalised (lower case, single spaces): "8 people", "mixpanel", "not used". */
  value: string;
  /** The subject holds several values at once (statements about users, intentions): a new value adds to them. */
  multi: boolean;
  /** The user says something changed or corrects an earlier statement ("actually", "switched to", "no longer"). */
  change: boolean;
  /** Earlier values it replaces, named by the user ("switched from Jira to Linear": ["jira"]). */
  replaces: string[];
}

/** The most facts one message yields (a long paste is not a list of facts about the team). */
export const MAX_FACTS_PER_MESSAGE = 12;
/** Longest fact content kept, in characters. */
export const MAX_FACT_CHARS = 500;
