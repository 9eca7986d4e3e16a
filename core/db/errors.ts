import { ConditionalCheckFailedException } from "@aws-sdk/client-dynamodb";

/**
 * True when a write was refused by its condition (ElectroDB wraps the SDK's ConditionalCheckFailedException as the
 * error's `cause`): the state it was guarded on had changed, or the item already or no longer existed.
 */
export const isConditionalFailure = (err: unknown): boolean =>
  err instanceof ConditionalCheckFailedException || (err as { cause?: unknown } | null)?.cause instanceof ConditionalCheckFailedException;
