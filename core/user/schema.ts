import * as z from "zod";

export const AccessStatus = z.enum(["pending", "active", "suspended"]);
/** An access status (spec 01 User `access_status`); its transitions are core/user/access.ts. */
export type AccessStatus = z.infer<typeof AccessStatus>;

/**
 * The profile response of `GET /api/auth/me` (spec 01, User): snake_case fields plus the camelCase aliases
 * the spec lists, both present (DESIGN.md section 5).
 */
export const UserProfile = z
  .object({
    id: z.uuid(),
    email: z.string(),
    name: z.string(),
    avatar_url: z.string().nullable(),
    idp_id: z.string(),
    idpUserId: z.string(),
    access_status: AccessStatus,
    accessStatus: AccessStatus,
    has_product_access: z.boolean(),
    hasProductAccess: z.boolean(),
    is_founder: z.boolean(),
    isFounder: z.boolean(),
    referral_code: z.string(),
    referralCode: z.string(),
    activated_at: z.string().nullable(),
    activatedAt: z.string().nullable(),
    created_at: z.string(),
  })
  .meta({ id: "UserProfile" });
export type UserProfile = z.infer<typeof UserProfile>;

export const RedeemCodeInput = z.object({ code: z.string().trim().min(4).max(64) }).meta({ id: "RedeemCodeInput" });
export type RedeemCodeInput = z.infer<typeof RedeemCodeInput>;

/** Claims of a verified access token that the service uses. */
export interface TokenClaims {
  sub: string;
  email?: string;
  /**
   * The provider's `email_verified` (OIDC standard claim): false when it says the address was not verified, and then
   * the address grants nothing (ADMIN_EMAILS, FOUNDER_EMAILS); undefined when the token does not say.
   */
  email_verified?: boolean;
  name?: string;
  picture?: string;
  groups: string[];
}

/** Identity-provider webhook payload (Standard Webhooks envelope: type + data). */
export const IdpWebhookEvent = z
  .object({
    type: z.enum(["user.created", "user.updated", "user.deleted"]),
    data: z.object({
      id: z.string().min(1),
      email: z.string().email().optional(),
      name: z.string().optional(),
      avatar_url: z.string().optional(),
    }),
  })
  .meta({ id: "IdpWebhookEvent" });
export type IdpWebhookEvent = z.infer<typeof IdpWebhookEvent>;

export const WebhookAck = z.object({ status: z.string() }).meta({ id: "WebhookAck" });
