/** USD of model cost per credit (spec 02 Credits). */
export const USD_PER_CREDIT = 0.08;

/** Outcome of an AI run, for its minimum charge (spec 02 Credits: minimum charge by run outcome). */
export type RunOutcome = "success" | "failed" | "cancelled" | "partial";

/** Minimum charge of every chat message, in credits (spec 02 Credits). */
export const CHAT_MESSAGE_MIN_CREDITS = 0.25;

/**
 * Credits a run costs (spec 02 Credits): `costUsd / 0.08` rounded up to the nearest 0.5, but at least the outcome's
 * minimum (success 0.5, failed with cost 0.25, failed without cost 0, cancelled or partial 0.25), and at least 0.25
 * for a chat message. Charging it is billing's (issue #12); this is the figure the `done` event reports.
 * @param costUsd model cost of the run in USD (0 on the local engine)
 */
export function creditsFor(costUsd: number, outcome: RunOutcome, opts: { chatMessage?: boolean } = {}): number {
  const metered = costUsd > 0 ? Math.ceil(costUsd / USD_PER_CREDIT / 0.5 - 1e-9) * 0.5 : 0;
  const minimum = outcome === "success" ? 0.5 : outcome === "failed" ? (costUsd > 0 ? 0.25 : 0) : 0.25;
  const floor = opts.chatMessage && outcome !== "failed" ? Math.max(minimum, CHAT_MESSAGE_MIN_CREDITS) : minimum;
  return Math.max(metered, floor);
}
