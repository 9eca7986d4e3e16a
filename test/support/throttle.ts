/**
 * DynamoDB under load, as the table answers it, for tests: a BatchGetItem that leaves part of its keys unprocessed
 * (`UnprocessedKeys`), a transaction cancelled by a conflict, injected in the project's DynamoDB client's middleware
 * (step "initialize"), so the code under test sees exactly what DynamoDB sends.
 */
import * as awsErrors from "@aws-sdk/client-dynamodb";
import { dynamoClient } from "../../core/db/client";

type BatchGetInput = { RequestItems?: Record<string, { Keys: Record<string, unknown>[] } & Record<string, unknown>> };

/**
 * Withhold the last key of the BatchGetItem calls whose keys mention `match`, `times` times: the call reads the
 * other keys and answers the last as unprocessed.
 * @returns how many calls were withheld so far, and `remove` (call it in `finally`)
 */
export function withholdBatchKeys(match: string, times: number): { withheld: () => number; remove: () => void } {
  const name = `withholdBatchKeys-${Math.random().toString(36).slice(2)}`;
  let withheld = 0;
  dynamoClient().middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as BatchGetInput;
      const [table, request] = Object.entries(input.RequestItems ?? {})[0] ?? [];
      if (withheld < times && /BatchGet/.test(String(context.commandName)) && table && request && JSON.stringify(request.Keys).includes(match)) {
        withheld++;
        const kept = request.Keys.slice(0, -1);
        const last = request.Keys.slice(-1);
        const out = (kept.length
          ? await next({ ...args, input: { ...input, RequestItems: { [table]: { ...request, Keys: kept } } } })
          : { output: { Responses: { [table]: [] } } }) as { output: Record<string, unknown> };
        return { ...out, output: { ...out.output, UnprocessedKeys: { [table]: { ...request, Keys: last } } } } as never;
      }
      return next(args);
    },
    { step: "initialize", name },
  );
  return { withheld: () => withheld, remove: () => dynamoClient().middlewareStack.remove(name) };
}

/**
 * DynamoDB cancelling a transaction that met another on the same item (`TransactionCanceledException`, reason
 * `TransactionConflict` on item `conflictAt`): DynamoDB Local serializes transactions instead, so this is how a test
 * sees the real service's answer. The next `times` TransactWriteItems calls whose input mentions every string of
 * `match` are cancelled that way, before they reach the table.
 * @returns how many are still to cancel (`left`, settable to arm it again) and `remove` (call it in `finally`)
 */
export function conflictTransactions(match: string[], times = 1, conflictAt = 1): { left: number; remove: () => void } {
  const { TransactionCanceledException } = awsErrors;
  const name = `conflictTransactions-${Math.random().toString(36).slice(2)}`;
  const state = { left: times, remove: () => dynamoClient().middlewareStack.remove(name) };
  dynamoClient().middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { TransactItems?: unknown[] };
      const text = JSON.stringify(input);
      if (state.left > 0 && /^TransactWrite/.test(context.commandName ?? "") && match.every((m) => text.includes(m))) {
        state.left--;
        throw new TransactionCanceledException({
          message: "Transaction cancelled, please refer cancellation reasons for specific reasons [None, TransactionConflict]",
          $metadata: {},
          CancellationReasons: (input.TransactItems ?? []).map((_, i) => (i === conflictAt ? { Code: "TransactionConflict", Message: "Transaction is ongoing for the item" } : { Code: "None" })),
        });
      }
      return next(args);
    },
    { step: "initialize", name },
  );
  return state;
}
