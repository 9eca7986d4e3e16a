/** One plain-text e-mail the service sends (invitations, digests). */
export interface MailMessage {
  /** One recipient address (already validated as an e-mail by the caller's schema). */
  to: string;
  subject: string;
  /** Plain-text body, UTF-8. */
  text: string;
}

/** The mail port (DESIGN.md section 2, "mail"): SES in AWS, `.eml` files in an outbox folder locally. */
export interface Mailer {
  /** Send one message. @returns the engine's message id (SES MessageId, or the .eml file name). */
  send(message: MailMessage): Promise<{ id: string }>;
}

/** Refuse header values that would end a header line: an address or subject with CR/LF could inject headers. */
export function assertHeaderSafe(name: string, value: string): void {
  if (/[\r\n]/.test(value)) throw new RangeError(`Mail header ${name} may not contain line breaks`);
}
