import { Webhook, WebhookVerificationError } from "standardwebhooks";
import { Config } from "../../core/config";
import { AppError } from "../../core/error";
import * as User from "../../core/user";
import * as Workspace from "../../core/workspace";

/**
 * Verify and apply an identity-provider webhook (spec 02 `POST /api/webhooks/idp`). The signature is checked
 * with the Standard Webhooks library (webhook-id, webhook-timestamp, webhook-signature headers; 5-minute
 * tolerance) before the body is trusted; each message (`webhook-id`) is applied once, so an exact replay inside the
 * tolerance, or a provider retry of a message already applied, answers 200 without applying it again.
 * @throws AppError INVALID_SIGNATURE (400) for a missing or bad signature or an unconfigured secret;
 *   BAD_REQUEST (400, with `errors`) for a well-signed payload that is not an event envelope, or a user event without
 *   its fields (spec 02 Errors: an invalid webhook payload is 400); CONFLICT (409) while another delivery of the same
 *   message is being applied. A well-formed event of a type the service does not handle answers ok, unapplied.
 */
export async function receiveIdpWebhook(rawBody: string, headers: Record<string, string | undefined>): Promise<{ status: "ok" }> {
  const secret = Config.idpWebhookSecret();
  if (!secret) throw new AppError("INVALID_SIGNATURE", "Identity-provider webhook secret is not configured");
  let payload: unknown;
  try {
    payload = new Webhook(secret).verify(rawBody, {
      "webhook-id": headers["webhook-id"] ?? "",
      "webhook-timestamp": headers["webhook-timestamp"] ?? "",
      "webhook-signature": headers["webhook-signature"] ?? "",
    });
  } catch (err) {
    if (err instanceof WebhookVerificationError) throw new AppError("INVALID_SIGNATURE", `Webhook signature rejected: ${err.message}`);
    if (err instanceof SyntaxError) throw new AppError("BAD_REQUEST", "Webhook payload is not JSON");
    throw err;
  }
  const parsed = User.IdpWebhookEvent.safeParse(payload);
  if (!parsed.success) {
    throw new AppError("BAD_REQUEST", "Webhook payload is not a valid identity-provider event", {
      errors: parsed.error.issues.map((i) => ({ loc: ["body", ...i.path.map(String)], msg: i.message, type: i.code })),
    });
  }
  // The id is part of what was signed, so only the provider can have chosen it; an exact replay is acknowledged unapplied.
  await User.applyIdpEventOnce(headers["webhook-id"]!, parsed.data, Workspace.removeAllOf);
  return { status: "ok" };
}
