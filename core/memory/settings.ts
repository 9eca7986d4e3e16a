/**
 * Memory's settings (read on each call, like core/config.ts; kept here until they move there):
 * - `MEMORY`: `off` (or false, 0, no) turns memory off: nothing is learned, the profile answers `is_available: false`
 *   with empty lists and search an empty result (spec 01: "empty when the memory service is unavailable").
 * - `MEMORY_QUEUE_URL`: the SQS FIFO queue of exchanges to learn from in AWS (core/queue).
 */
export function memoryAvailable(): boolean {
  const value = (process.env.MEMORY ?? "").trim().toLowerCase();
  return !["off", "false", "0", "no"].includes(value);
}

/** Receives of an exchange before it is dead-lettered (the SQS redrive policy and the local queue use it). */
export const MEMORY_MAX_RECEIVE_COUNT = 3;
