/**
 * The id index (gsi1) lagging its table, for tests of reads by id: DynamoDB's global secondary indexes are eventually
 * consistent, so an item another container created a moment ago can be missing from gsi1 for a few hundred ms.
 */
import { dynamoClient } from "../../core/db/client";

/**
 * Answers the next `times` gsi1 Queries that name `id` with no items, as a lagging index would; every other call goes
 * through. Returns how many were hidden so far and a `restore` that removes the middleware (call it in `finally`).
 */
export function idIndexLags(id: string, times = 1): { hidden: () => number; restore: () => void } {
  let hidden = 0;
  const name = `idIndexLags-${id}`;
  dynamoClient().middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { IndexName?: string };
      if (hidden < times && /Query/.test(String(context.commandName)) && input.IndexName === "gsi1" && JSON.stringify(input).includes(id)) {
        hidden++;
        return { output: { Items: [], Count: 0, ScannedCount: 0, $metadata: {} }, response: {} } as never;
      }
      return next(args);
    },
    { step: "initialize", name },
  );
  return { hidden: () => hidden, restore: () => void dynamoClient().middlewareStack.remove(name) };
}
