/**
 * The repair request's wire form (issue #21): the user turn the harness appends when an answer fails its checks
 * (built by ./repair.ts `repairTurn`). Kept apart, with no imports, so the local agent engine can read it without
 * pulling in the harness.
 */

/** Marks a repair request in the conversation (the local engine recognises it by this). */
export const REPAIR_MARK = "[quality check]";

/** The machine-readable part of a repair request: what the answer must lose. */
export interface RepairDirectives {
  /** Quotes not found verbatim where the answer attributes them. */
  drop_quotes: string[];
  /** Ids that do not resolve in the workspace. */
  drop_ids: string[];
  /** Statements whose count is false, with the number they state. */
  drop_counts: { statement: string; n: number }[];
  /** The answer must cite the insights and sources it draws on. */
  cite: boolean;
}

/** The directives of a repair request, or undefined when `text` is not one. */
export function parseRepairTurn(text: string): RepairDirectives | undefined {
  if (!text.startsWith(REPAIR_MARK)) return undefined;
  const line = /^repair: (\{.*\})$/m.exec(text)?.[1];
  if (!line) return undefined;
  try {
    const d = JSON.parse(line) as Partial<RepairDirectives>;
    return { drop_quotes: d.drop_quotes ?? [], drop_ids: d.drop_ids ?? [], drop_counts: d.drop_counts ?? [], cite: !!d.cite };
  } catch {
    return undefined;
  }
}
