/**
 * Ids derived from content or from another id, shared by the integrations (code host, planner, execution tickets):
 * the same input always gives the same id, which is what makes a retried write find the first attempt's.
 */
import { createHash } from "node:crypto";

/** SHA-256 of a UTF-8 string, as 64 lower-case hex digits. */
export const sha256Hex = (s: string): string => createHash("sha256").update(s).digest("hex");

/**
 * A UUID in version-4 form derived from a stable id (a UUID, or 32 or more hex digits such as `sha256Hex`'s): Linear
 * takes a caller-chosen issue or comment id "in UUID v4 format", and the same action must always choose the same one
 * (its replay then finds the first run's write); a link id derived this way is as UUID-shaped as a random one.
 * @param id a UUID (dashes dropped) or at least 32 hex digits; only the first 32 are used
 * @returns `xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx`, lower case
 */
export const v4From = (id: string): string => {
  const hex = id.replace(/-/g, "").toLowerCase();
  const v = `${hex.slice(0, 12)}4${hex.slice(13, 16)}${((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16)}${hex.slice(17, 32)}`;
  return `${v.slice(0, 8)}-${v.slice(8, 12)}-${v.slice(12, 16)}-${v.slice(16, 20)}-${v.slice(20)}`;
};
