/**
 * A DELETE that lands between a request's read and its write: the request is sent, and just before its first
 * UpdateItem of the item (`sk`) goes to DynamoDB, `remove` runs to its end (middleware on the shared client).
 */
import { expect } from "vitest";
import { dynamoClient } from "../../core/db/client";

/**
 * Run `send`; when its first UpdateItem naming `sk` is about to go, await `remove` first (it must answer 2xx).
 * @param command which write to wait for, by command name (default UpdateItem; e.g. /^TransactWrite/)
 * @returns what `send` returns
 */
export async function deletedBeforeUpdate<T>(sk: string, remove: () => Promise<{ status: number }>, send: () => Promise<T>, command = /^Update/): Promise<T> {
  const name = `deleteBeforeUpdate-${sk}`;
  let removed = false;
  dynamoClient().middlewareStack.add(
    (next, context) => async (args) => {
      if (!removed && command.test(context.commandName ?? "") && JSON.stringify(args.input).includes(sk)) {
        removed = true;
        expect((await remove()).status).toBeLessThan(300);
      }
      return next(args);
    },
    { step: "initialize", name },
  );
  try {
    return await send();
  } finally {
    dynamoClient().middlewareStack.remove(name);
    expect(removed, "the DELETE ran before the update").toBe(true);
  }
}

/**
 * A DELETE that lands right after a request's write (the other half of `deletedBeforeUpdate`): the first `command`
 * naming `sk` goes to DynamoDB, then `remove` runs to its end (it must answer 2xx) before the request goes on, whether
 * the write succeeded or was refused.
 */
export async function deletedAfterWrite<T>(sk: string, remove: () => Promise<{ status: number }>, send: () => Promise<T>, command: RegExp): Promise<T> {
  const name = `deletedAfterWrite-${sk}`;
  let removed = false;
  dynamoClient().middlewareStack.add(
    (next, context) => async (args) => {
      if (removed || !command.test(context.commandName ?? "") || !JSON.stringify(args.input).includes(sk)) return next(args);
      removed = true;
      try {
        return await next(args);
      } finally {
        expect((await remove()).status).toBeLessThan(300);
      }
    },
    { step: "initialize", name },
  );
  try {
    return await send();
  } finally {
    dynamoClient().middlewareStack.remove(name);
    expect(removed, "the DELETE ran after the write").toBe(true);
  }
}

/**
 * Run `send`; when its first DynamoDB command matching `command` and naming `marker` is about to go, run `inner` to
 * its end first. Every other command (`inner`'s own included) passes untouched.
 * @returns what `send` and `inner` answered
 */
export async function landsBefore<T, U>(command: RegExp, marker: string, inner: () => Promise<U>, send: () => Promise<T>): Promise<[T, U]> {
  const name = `landsBefore-${marker}-${Math.random()}`;
  let ran: { value: U } | undefined;
  let fired = false;
  dynamoClient().middlewareStack.add(
    (next, context) => async (args) => {
      if (!fired && command.test(context.commandName ?? "") && JSON.stringify(args.input).includes(marker)) {
        fired = true;
        ran = { value: await inner() };
      }
      return next(args);
    },
    { step: "initialize", name },
  );
  try {
    const out = await send();
    expect(ran, "the inner request ran before the write").toBeDefined();
    return [out, ran!.value];
  } finally {
    dynamoClient().middlewareStack.remove(name);
  }
}
