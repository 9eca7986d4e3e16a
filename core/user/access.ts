import { stateTable } from "../state-table";
import type { AccessStatus } from "./schema";

/**
 * The access status machine (spec 01 "States and transitions → Access status") as ONE table `from → allowed to[]`
 * (DESIGN.md section 4.7). A new user starts `pending` (gating on) or `active` (gating off, founders); redeeming a
 * code moves pending → active; an admin revoking access moves active → suspended. Nothing leaves `suspended`: the
 * spec names no way back, so restoring an account is not an operation of this service.
 * Every move is a conditional write on the state it was read in (core/user/index.ts `redeemCode`, `revokeAccess`).
 */
export const ACCESS_TRANSITIONS: Readonly<Record<AccessStatus, readonly AccessStatus[]>> = {
  pending: ["active"],
  active: ["suspended"],
  suspended: [],
};

/** Checks and lists over ACCESS_TRANSITIONS (core/state-table.ts). */
export const AccessStatusTable = stateTable(ACCESS_TRANSITIONS);
