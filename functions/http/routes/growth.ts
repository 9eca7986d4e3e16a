import { defineRoutes, type RouteSpec } from "../../lib/route";
import { UserProfile } from "../../../core/user/schema";
import {
  ApproveInput,
  ApproveResult,
  CodesPage,
  CodesQuery,
  GeneratedCodes,
  GenerateCodesInput,
  GrowthStats,
  JoinWaitlistAnswer,
  JoinWaitlistInput,
  RevokeAccessParams,
  SyncSheetsResult,
  WaitlistPage,
  WaitlistQuery,
} from "../../../core/growth/schema";

/**
 * Admin growth (spec 02 "Admin growth (/api/admin/plg, admin authentication)"; DESIGN.md section 5: admins carry the
 * group `admin` or an ADMIN_EMAILS address) and the public waitlist join. Every admin route shares one window of
 * 60 requests a minute per admin (spec 02 Limits).
 */
export const growthRoutes = defineRoutes({
  "growth.joinWaitlist": {
    method: "POST", path: "/api/waitlist", group: "growth", access: "public",
    summary: "Join the waitlist: the same answer whether or not the address is listed",
    body: JoinWaitlistInput,
    // Counted per client address inside core/growth (a public route has no user to count against).
    errors: ["RATE_LIMITED"],
    responses: { 202: JoinWaitlistAnswer },
  },
  "growth.waitlist": {
    method: "GET", path: "/api/admin/plg/waitlist", group: "growth", access: "admin",
    summary: "Waitlist entries of a status (default waiting) in join order, with positions and referral counts",
    query: WaitlistQuery, rateLimit: "admin_plg",
    responses: { 200: WaitlistPage },
  },
  "growth.approve": {
    method: "POST", path: "/api/admin/plg/waitlist/approve", group: "growth", access: "admin",
    summary: "Approve waiting entries: an access code each and an invitation e-mail",
    body: ApproveInput, rateLimit: "admin_plg",
    errors: ["SERVICE_UNAVAILABLE"],
    responses: { 200: ApproveResult },
  },
  "growth.generateCodes": {
    method: "POST", path: "/api/admin/plg/codes/generate", group: "growth", access: "admin",
    summary: "Generate access codes with metadata (trial_days and trial_credits are honoured on redemption)",
    body: GenerateCodesInput, rateLimit: "admin_plg",
    responses: { 200: GeneratedCodes },
  },
  "growth.codes": {
    method: "GET", path: "/api/admin/plg/codes", group: "growth", access: "admin",
    summary: "Access codes, newest first",
    query: CodesQuery, rateLimit: "admin_plg",
    responses: { 200: CodesPage },
  },
  "growth.syncSheets": {
    method: "POST", path: "/api/admin/plg/sync-sheets", group: "growth", access: "admin",
    summary: "Write the waitlist to the spreadsheet (a CSV under .data/ locally)",
    rateLimit: "admin_plg",
    errors: ["SERVICE_UNAVAILABLE"],
    responses: { 200: SyncSheetsResult },
  },
  "growth.stats": {
    method: "GET", path: "/api/admin/plg/stats", group: "growth", access: "admin",
    summary: "Waitlist, code and user totals and the invitation conversion rate",
    rateLimit: "admin_plg",
    responses: { 200: GrowthStats },
  },
  "growth.revokeAccess": {
    method: "POST", path: "/api/admin/plg/users/{user_id}/revoke-access", group: "growth", access: "admin",
    summary: "Revoke a user's access: active becomes suspended (spec 01 Access status)",
    params: RevokeAccessParams, rateLimit: "admin_plg",
    errors: ["USER_NOT_FOUND", "INVALID_TRANSITION", "CONFLICT"],
    responses: { 200: UserProfile },
  },
} satisfies Record<string, RouteSpec>);
