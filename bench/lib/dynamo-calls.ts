/**
 * The DynamoDB calls a piece of work makes through the handlers' client (core/db/client.ts), for benchmarks that
 * print them beside their floors (foundation, search).
 */
import { dynamoClient } from "../../core/db/client";

/** Document-client command names → the DynamoDB operations they send. */
const OPERATION: Record<string, string> = {
  Get: "GetItem", Put: "PutItem", Update: "UpdateItem", Delete: "DeleteItem", BatchGet: "BatchGetItem",
  BatchWrite: "BatchWriteItem", TransactGet: "TransactGetItems", TransactWrite: "TransactWriteItems",
};

/**
 * Run `fn` and list the DynamoDB operations it sent through the handlers' client, in order, with their item counts
 * where there are several: e.g. ["GetItem", "BatchGetItem(2)", "TransactWriteItems(4)"].
 * @throws whatever `fn` throws (the recorder is removed either way).
 */
export async function dynamoCallsOf(fn: () => Promise<unknown>): Promise<string[]> {
  const calls: string[] = [];
  const stack = dynamoClient().middlewareStack;
  const name = `benchCallRecorder-${Math.random().toString(36).slice(2)}`;
  stack.add(
    (next, context) => async (args) => {
      const input = args.input as { TransactItems?: unknown[]; RequestItems?: Record<string, { Keys?: unknown[] } | unknown[]> };
      const command = String(context.commandName ?? "?").replace(/Command$/, "");
      const operation = OPERATION[command] ?? command;
      const request = Object.values(input.RequestItems ?? {})[0];
      const items = input.TransactItems?.length ?? (Array.isArray(request) ? request.length : request?.Keys?.length);
      calls.push(items === undefined ? operation : `${operation}(${items})`);
      return next(args);
    },
    { step: "initialize", name },
  );
  try {
    await fn();
  } finally {
    stack.remove(name);
  }
  return calls;
}
