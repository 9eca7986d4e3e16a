/**
 * The research quality score of a run (issue #21; docs/decisions.md "Research quality score"), 0 to 100:
 *
 *   RQS = round(100 × (0.35·contract + 0.40·verifier + 0.25·grounding))
 *   capped at 69 when the contract fails and at 49 when the verifier fails;
 *   a run is below the quality threshold when RQS < 70.
 *
 * contract and verifier are their scores (shares of checks / claims that hold). grounding is the mean of the parts a
 * run has: its answer's share of statements that make a checkable claim that holds (a cited id that resolves, a quote
 * found verbatim, a true count; an answer of no statement counts 1), and its synthesized insights' share with at
 * least one quote found verbatim in its source. The caps make every contract or verifier failure fall below the
 * threshold, so the failure is repaired (or the run ends degraded), whatever the other scores.
 */
import type { ContractResult } from "./contract";
import type { VerifierResult } from "./verifier";

export const RQS_WEIGHTS = { contract: 0.35, verifier: 0.4, grounding: 0.25 } as const;
/** Below this a run is repaired and retried. */
export const RQS_THRESHOLD = 70;
/** Highest RQS of a run whose contract failed / whose verifier failed. */
export const CONTRACT_FAIL_CAP = 69;
export const VERIFIER_FAIL_CAP = 49;

/** Grounding, 0..1 (see the file's header). */
export function groundingOf(v: Pick<VerifierResult, "grounded" | "statements" | "artifactQuotes">): number {
  const parts: number[] = [v.statements ? v.grounded.length / v.statements : 1];
  if (v.artifactQuotes.insights) parts.push(v.artifactQuotes.grounded / v.artifactQuotes.insights);
  return Math.round((parts.reduce((a, b) => a + b, 0) / parts.length) * 1000) / 1000;
}

/** The RQS of a judged run, 0..100 (see the file's header). */
export function rqsOf(contract: Pick<ContractResult, "passed" | "score">, verifier: Pick<VerifierResult, "passed" | "score">, grounding: number): number {
  let rqs = Math.round(100 * (RQS_WEIGHTS.contract * contract.score + RQS_WEIGHTS.verifier * verifier.score + RQS_WEIGHTS.grounding * grounding));
  if (!contract.passed) rqs = Math.min(rqs, CONTRACT_FAIL_CAP);
  if (!verifier.passed) rqs = Math.min(rqs, VERIFIER_FAIL_CAP);
  return Math.max(0, Math.min(100, rqs));
}
