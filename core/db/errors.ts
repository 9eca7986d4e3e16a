import { ConditionalCheckFailedException } from "@aws-sdk/client-dynamodb";

/**
 * True when a write was refused by its condition (ElectroDB wraps the SDK's ConditionalCheckFailedException as the
 * error's `cause`): the state it was guarded on had changed, or the item already or no longer existed.
 */
export const isConditionalFailure = (err: unknown): boolean =>
  err instanceof ConditionalCheckFailedException || (err as { cause?: unknown } | null)?.cause instanceof ConditionalCheckFailedException;

/** An ElectroDB transaction's cancellation code per item ("None" for the items that did not cause it); [] when it committed. */
export const cancelCodes = (result: { canceled: boolean; data: unknown }): string[] =>
  result.canceled ? (result.data as { code?: string }[]).map((d) => d?.code ?? "None") : [];
