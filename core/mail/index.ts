/**
 * Mail (DESIGN.md section 2 and 6.5): one port, two engines chosen by MAIL_ENGINE like the other engines — `ses`
 * (Amazon SES v2; the stacks set it with MAIL_FROM) and `outbox` (the default: `.eml` files under MAIL_OUTBOX_DIR,
 * `.data/outbox/` on the embedded runtime). The SES client is loaded only when chosen, so the local runtime never
 * needs AWS and a Lambda that never mails never loads it.
 */
import { Config } from "../config";
import { AppError } from "../error";
import type { Mailer, MailMessage } from "./port";

export type { Mailer, MailMessage } from "./port";

/** The sender the outbox uses when MAIL_FROM is unset: nothing leaves the machine, so any address will do. */
const LOCAL_FROM = "Research-to-Delivery <no-reply@localhost>";

/**
 * The configured mail engine, checked before anything is changed on its behalf (an approval that could not send its
 * invitations must not happen silently).
 * @throws AppError SERVICE_UNAVAILABLE (503) naming MAIL_FROM when the SES engine has no sender.
 */
export async function mailer(): Promise<Mailer> {
  if (Config.mailEngine() === "ses") {
    const from = Config.mailFrom();
    if (!from) throw new AppError("SERVICE_UNAVAILABLE", "Mail is not configured: set MAIL_FROM to a verified SES identity", { settings: ["MAIL_FROM"] });
    const { SesMailer } = await import("./ses");
    return new SesMailer(from);
  }
  const { OutboxMailer } = await import("./outbox");
  return new OutboxMailer(Config.mailOutboxDir(), Config.mailFrom() ?? LOCAL_FROM);
}

/** Send one message through the configured engine. @throws as `mailer()`, and the engine's own failures. */
export async function sendMail(message: MailMessage): Promise<{ id: string }> {
  return (await mailer()).send(message);
}
