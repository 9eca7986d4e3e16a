/**
 * Text markers of the local synthesis engine that other areas check too (the copilot's harness: alerts, contract,
 * repair). A module of their own, without the NLP: importing them never loads wink's language model (naming.ts does,
 * through nlp.ts), which the copilot's cold start does not need (issue #24 point 3). naming.ts re-exports them.
 */

/**
 * Redaction markers and template placeholders: "REDACTED", "[redacted]", "[Name]", "XXX", "***", "<name>",
 * "{name}", "█". Text carrying one never names a theme (it is what was removed, not what was said).
 */
export const REDACTION_RE =
  /\bredacted\b|\[\s*(?:redacted|removed|name|first name|last name|email|phone|address|participant|org(?:anization)?|company|location|date)[^\]]{0,20}\]|\bx{3,}\b|\*{3,}|<\s*(?:name|redacted|email|phone|person|org|company|location|participant)[^>]{0,20}>|\{\s*(?:name|redacted|email|phone|person|org|company|location|participant)[^}]{0,20}\}|█/i;

/** Stock title prefixes of the keyphrase templates (`titleFor`): a title starting with one is "a template over keywords". */
export const STOCK_PREFIXES = ["Users struggle with", "Users ask for", "Unmet need:", "How users work with", "Users value", "Feedback on", "Users want"] as const;

/** Whether a title is one of the keyphrase templates rather than a sentence from the evidence. */
export function isStockTitle(title: string): boolean {
  return STOCK_PREFIXES.some((p) => title.startsWith(p));
}
