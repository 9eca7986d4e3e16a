import { defineRoutes, type RouteSpec } from "../../lib/route";
import { RedeemCodeInput, UserProfile } from "../../../core/user/schema";

/** Account: the caller's profile and access codes (spec 01 Account; DESIGN.md section 5 redeem-code). */
export const authRoutes = defineRoutes({
  "auth.me": {
    method: "GET", path: "/api/auth/me", group: "auth", access: "user",
    summary: "The caller's profile (snake_case plus camelCase aliases)",
    responses: { 200: UserProfile },
  },
  "auth.redeemCode": {
    method: "POST", path: "/api/auth/redeem-code", group: "auth", access: "user",
    summary: "Redeem an access code: a pending account becomes active",
    body: RedeemCodeInput,
    responses: { 200: UserProfile },
  },
} satisfies Record<string, RouteSpec>);
