import { setTimeout as sleep } from "node:timers/promises";
import type { AppError } from "../error";
import { cancelCodes, cancelledOnlyBy } from "./errors";

/**
 * A short, growing, jittered pause before a write that met another on the same item is sent again (ms: 10 plus up to
 * 40 per attempt), so two writers that collided do not collide again in step.
 */
export const conflictPause = (attempt: number): Promise<void> => sleep(10 + Math.random() * 40 * attempt);

/**
 * Send an ElectroDB write transaction again while DynamoDB cancels it only for `TransactionConflict` (another
 * transaction on one of its items at the same moment: nothing was written), after `conflictPause`, up to `tries` sends.
 * @param send builds and sends the transaction (`createWriteTransaction(...).go()`), once per try
 * @param refusal the error thrown when every try collided (a 409 CONFLICT)
 * @returns the cancellation codes per item of a transaction refused for another reason (a condition, a throttle), or
 *   [] when it committed
 * @throws `refusal()` after `tries` collisions
 */
export async function transactRetryingConflicts(send: () => Promise<{ canceled: boolean; data: unknown }>, tries: number, refusal: () => AppError): Promise<string[]> {
  for (let attempt = 1; ; attempt++) {
    const codes = cancelCodes(await send());
    if (!cancelledOnlyBy(codes, ["TransactionConflict"])) return codes;
    if (attempt >= tries) throw refusal();
    await conflictPause(attempt);
  }
}
