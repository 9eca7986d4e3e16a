/**
 * DynamoDB throttling, as the table answers it, for tests: a BatchGetItem that leaves part of its keys unprocessed
 * (`UnprocessedKeys`), injected in the project's DynamoDB client's middleware (step "initialize"), so the code under
 * test sees exactly what DynamoDB sends under load.
 */
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
