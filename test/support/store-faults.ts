/**
 * Faults of the store at one write, injected as middleware on the shared DynamoDB client: the drafted document's
 * create (the ElectroDB transaction that writes `document#<id>`) failing once, as a store that did not answer or a
 * process that died at that write would leave it.
 */
import { dynamoClient } from "../../core/db/client";

/** The transaction that creates a drafted document (its items' sort keys start `document#<uuid>`). */
const isDocumentCreate = (commandName: string | undefined, input: unknown) =>
  /^TransactWrite/.test(commandName ?? "") && /document#[0-9a-f]{8}-/.test(JSON.stringify(input));

/**
 * Make the next document create fail with a 5xx-class store error (`InternalServerError`), once.
 * @returns `failed()` (whether it has failed yet) and `remove()` (take the middleware off; call it in a `finally`)
 */
export function documentCreateFailsOnce(): { failed: () => boolean; remove: () => void } {
  const name = `documentCreateFailsOnce-${Math.random()}`;
  let failed = false;
  dynamoClient().middlewareStack.add(
    (next, context) => async (args) => {
      if (!failed && isDocumentCreate(context.commandName, args.input)) {
        failed = true;
        throw Object.assign(new Error("the store did not answer"), { name: "InternalServerError" });
      }
      return next(args);
    },
    { step: "initialize", name },
  );
  return { failed: () => failed, remove: () => dynamoClient().middlewareStack.remove(name) };
}

/**
 * Hold the next document create until `release()`: `atHold` resolves when it is reached (a request then runs with
 * its draft made but not stored).
 */
export function documentCreateHeld(): { atHold: Promise<void>; release: () => void; remove: () => void } {
  const name = `documentCreateHeld-${Math.random()}`;
  let reached!: () => void;
  let release!: () => void;
  const atHold = new Promise<void>((r) => (reached = r));
  const released = new Promise<void>((r) => (release = r));
  let held = false;
  dynamoClient().middlewareStack.add(
    (next, context) => async (args) => {
      if (!held && isDocumentCreate(context.commandName, args.input)) {
        held = true;
        reached();
        await released;
      }
      return next(args);
    },
    { step: "initialize", name },
  );
  return { atHold, release: () => release(), remove: () => dynamoClient().middlewareStack.remove(name) };
}

/**
 * Make the DynamoDB commands matching `command` whose input names `marker` fail with a 5xx-class store error
 * (`InternalServerError`, thrown before the SDK's retries), the first `times` of them (default: every one), as a store
 * that stopped answering or a process that died at that write would leave it.
 * @param error what the store throws instead (default the 5xx-class error above), e.g. a ValidationException
 * @returns `failed()` (how many have failed so far) and `remove()` (take the middleware off; call it in a `finally`)
 */
export function storeFails(
  command: RegExp,
  marker: string,
  times = Number.POSITIVE_INFINITY,
  error: () => Error = () => Object.assign(new Error("the store did not answer"), { name: "InternalServerError" }),
): { failed: () => number; remove: () => void } {
  const name = `storeFails-${marker}-${Math.random()}`;
  let failed = 0;
  dynamoClient().middlewareStack.add(
    (next, context) => async (args) => {
      if (failed < times && command.test(context.commandName ?? "") && JSON.stringify(args.input).includes(marker)) {
        failed++;
        throw error();
      }
      return next(args);
    },
    { step: "initialize", name },
  );
  return { failed: () => failed, remove: () => dynamoClient().middlewareStack.remove(name) };
}
