import { mkdir, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { assertHeaderSafe, type MailMessage, type Mailer } from "./port";

/** RFC 2047 encoded-word for a header with non-ASCII characters (subjects with names or dashes). */
const encodeHeader = (value: string): string =>
  /^[\x20-\x7e]*$/.test(value) ? value : `=?UTF-8?B?${Buffer.from(value, "utf8").toString("base64")}?=`;

/** Base64 body in 76-character lines (RFC 2045), so any UTF-8 text survives every mail client. */
const base64Lines = (text: string): string => Buffer.from(text.replace(/\r?\n/g, "\r\n"), "utf8").toString("base64").replace(/.{1,76}/g, "$&\r\n");

/**
 * Render one message as an RFC 5322 / MIME document (what a mail client opens from an `.eml` file).
 * @throws RangeError when `from`, `to` or the subject contains a line break.
 */
export function renderEml(from: string, message: MailMessage, messageId: string, date = new Date()): string {
  assertHeaderSafe("From", from);
  assertHeaderSafe("To", message.to);
  assertHeaderSafe("Subject", message.subject);
  return [
    `From: ${from}`,
    `To: ${message.to}`,
    `Subject: ${encodeHeader(message.subject)}`,
    `Date: ${date.toUTCString()}`,
    `Message-ID: <${messageId}>`,
    "MIME-Version: 1.0",
    "Content-Type: text/plain; charset=utf-8",
    "Content-Transfer-Encoding: base64",
    "",
    base64Lines(message.text),
  ].join("\r\n");
}

/**
 * The local mail engine: every message becomes one `.eml` file in `dir` (DESIGN.md section 2: `.data/outbox/`), named
 * `<ISO time>-<uuid>.eml` so a listing sorts by sending time. Written to a temporary name and renamed, so a reader
 * never sees half a message.
 */
export class OutboxMailer implements Mailer {
  constructor(
    private readonly dir: string,
    private readonly from: string,
  ) {}

  async send(message: MailMessage): Promise<{ id: string }> {
    const now = new Date();
    const uuid = randomUUID();
    const name = `${now.toISOString().replace(/[:.]/g, "-")}-${uuid}.eml`;
    const eml = renderEml(this.from, message, `${uuid}@outbox.local`, now);
    await mkdir(this.dir, { recursive: true });
    const path = join(this.dir, name);
    await writeFile(`${path}.tmp`, eml, "utf8");
    await rename(`${path}.tmp`, path);
    return { id: name };
  }
}
