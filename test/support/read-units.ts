/**
 * The DynamoDB reads a piece of work makes on one workspace, with the read units DynamoDB says each consumed: what the
 * slim-list tests (tasks, pending actions, agent runs, answers) measure a list or dashboard by.
 */
import { randomUUID } from "node:crypto";
import { dynamoClient } from "../../core/db/client";

/** One read of the workspace: command, index (none: the table), units consumed, bytes returned, keys asked (BatchGet). */
export interface WorkspaceRead {
  command: string;
  index?: string;
  /** A Query of the workspace's own partition (the table, not an index): what reads its items whole. */
  partitionRead: boolean;
  units: number;
  bytes: number;
  keys: number;
}

/**
 * Run `fn` and record the Query, Get and BatchGet calls whose input names `workspaceId`, each with
 * ReturnConsumedCapacity TOTAL set on it.
 * @returns `fn`'s result and the reads, in order
 */
export async function readsDuring<T>(workspaceId: string, fn: () => Promise<T>): Promise<{ result: T; reads: WorkspaceRead[] }> {
  const reads: WorkspaceRead[] = [];
  const name = `readUnits-${randomUUID()}`;
  dynamoClient().middlewareStack.add(
    (next, context) => async (args) => {
      const command = String(context.commandName);
      const input = args.input as Record<string, unknown>;
      if (!/Query|Get/.test(command) || !JSON.stringify(input).includes(workspaceId)) return next(args);
      input.ReturnConsumedCapacity = "TOTAL";
      const result = await next(args);
      const output = result.output as { ConsumedCapacity?: { CapacityUnits?: number } | { CapacityUnits?: number }[]; Items?: unknown[]; Item?: unknown; Responses?: Record<string, unknown[]> };
      const items = output.Items ?? (output.Item ? [output.Item] : Object.values(output.Responses ?? {}).flat());
      reads.push({
        command,
        index: input.IndexName as string | undefined,
        partitionRead: /Query/.test(command) && input.IndexName === undefined,
        units: [output.ConsumedCapacity ?? []].flat().reduce((n, c) => n + (c.CapacityUnits ?? 0), 0),
        bytes: JSON.stringify(items).length,
        keys: Object.values((input.RequestItems ?? {}) as Record<string, { Keys: unknown[] }>).reduce((n, r) => n + r.Keys.length, 0),
      });
      return result;
    },
    { step: "initialize", name },
  );
  try {
    return { result: await fn(), reads };
  } finally {
    dynamoClient().middlewareStack.remove(name);
  }
}
