import { defineRoutes, type RouteSpec } from "../../lib/route";
import { RedeemCodeInput, UserProfile } from "../../../core/user/schema";

/** Account: the caller's profile and access codes (spec 01 Account; DESIGN.md section 5 redeem-code). */
export const authRoutes = defineRoutes({
  "auth.me": {
    method: "GET", path: "/api/auth/me", group: "auth", access: "user",
    summary: "The caller's profile (snake_case plus camelCase aliases)",
    // A suspended user still learns that they are suspended (access_status) from their own profile.
    allowSuspended: true,
    allowWithoutProductAccess: true,
    responses: { 200: UserProfile },
  },
  "auth.redeemCode": {
    method: "POST", path: "/api/auth/redeem-code", group: "auth", access: "user",
    summary: "Redeem an access code: a pending account becomes active",
    body: RedeemCodeInput,
    // Every attempt counts, so guessing codes stops at the limit; a right code ends the attempts anyway.
    rateLimit: "access_code_redeem",
    // Redeeming is how a pending account gains product access.
    allowWithoutProductAccess: true,
    errors: ["INVALID_ACCESS_CODE", "ACCESS_CODE_REDEEMED", "ALREADY_ACTIVE", "CONFLICT"],
    responses: { 200: UserProfile },
  },
} satisfies Record<string, RouteSpec>);
