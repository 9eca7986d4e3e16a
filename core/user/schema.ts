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

/** The identity-provider events the service applies (spec 02 Inbound webhook events). */
export const IDP_USER_EVENT_TYPES = ["user.created", "user.updated", "user.deleted"] as const;

/** A user event: one the service applies (`applyIdpEvent`). */
export const IdpUserEvent = z.object({
  type: z.enum(IDP_USER_EVENT_TYPES),
  /**
   * When the event occurred (Standard Webhooks envelope, ISO 8601): the same on every delivery of it, unlike the
   * `webhook-timestamp` header (the attempt's). Orders `user.updated` events; a value that is not a time is ignored.
   */
  timestamp: z.string().optional(),
  data: z.object({
    id: z.string().min(1),
    email: z.string().email().optional(),
    name: z.string().optional(),
    avatar_url: z.string().optional(),
  }),
});
export type IdpUserEvent = z.infer<typeof IdpUserEvent>;

const isUserEventType = (type: string): type is IdpUserEvent["type"] => (IDP_USER_EVENT_TYPES as readonly string[]).includes(type);

/**
 * Identity-provider webhook payload (Standard Webhooks envelope: `type` + `data` object). A user event must have the
 * user event's shape (its field errors are reported where they are); any other type the provider sends (session.*,
 * email.*, ...) is well-formed with any `data` object, and is acknowledged without changing anything: refusing it
 * would have the provider retry it for days (spec 02 Errors: 400 is for an invalid payload).
 */
export const IdpWebhookEvent = z
  .looseObject({
    type: z.string().min(1).max(255),
    data: z.looseObject({}),
  })
  .superRefine((event, ctx) => {
    if (!isUserEventType(event.type)) return;
    const parsed = IdpUserEvent.safeParse(event);
    if (!parsed.success) for (const issue of parsed.error.issues) ctx.addIssue({ ...issue });
  })
  .meta({
    id: "IdpWebhookEvent",
    description: "A Standard Webhooks event. user.created, user.updated and user.deleted carry data {id, email?, name?, avatar_url?}; other types are acknowledged and ignored.",
  });
export type IdpWebhookEvent = z.infer<typeof IdpWebhookEvent>;

/** The user event `event` is, or null for a type the service does not handle (acknowledged; nothing changes). */
export const userEventOf = (event: IdpWebhookEvent): IdpUserEvent | null => (isUserEventType(event.type) ? IdpUserEvent.parse(event) : null);

export const WebhookAck = z.object({ status: z.string() }).meta({ id: "WebhookAck" });
