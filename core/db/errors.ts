import { ConditionalCheckFailedException, TransactionCanceledException } from "@aws-sdk/client-dynamodb";

/**
 * True when a write was refused by its condition (ElectroDB wraps the SDK's ConditionalCheckFailedException as the
 * error's `cause`): the state it was guarded on had changed, or the item already or no longer existed.
 */
export const isConditionalFailure = (err: unknown): boolean =>
  err instanceof ConditionalCheckFailedException || (err as { cause?: unknown } | null)?.cause instanceof ConditionalCheckFailedException;

/** An ElectroDB transaction's cancellation code per item ("None" for the items that did not cause it); [] when it committed. */
export const cancelCodes = (result: { canceled: boolean; data: unknown }): string[] =>
  result.canceled ? (result.data as { code?: string }[]).map((d) => d?.code ?? "None") : [];

/**
 * A raw SDK transaction's cancellation code per item (`TransactionCanceledException.CancellationReasons`, "None" for
 * the items that did not cause it); undefined when `err` is not a cancellation.
 */
export const sdkCancelCodes = (err: unknown): string[] | undefined =>
  err instanceof TransactionCanceledException ? (err.CancellationReasons ?? []).map((r) => r.Code ?? "None") : undefined;

/**
 * True when a cancellation was caused by `causes` alone: at least one item names one of them and no item names
 * anything else ("None" aside). E.g. `cancelledOnlyBy(codes, ["TransactionConflict"])`: a race worth retrying, not a
 * refused condition or a throttle.
 */
export const cancelledOnlyBy = (codes: readonly string[], causes: readonly string[]): boolean =>
  codes.some((c) => causes.includes(c)) && codes.every((c) => c === "None" || causes.includes(c));
