import { SESv2Client, SendEmailCommand } from "@aws-sdk/client-sesv2";
import { Config } from "../config";
import { assertHeaderSafe, type MailMessage, type Mailer } from "./port";

/** The AWS mail engine: Amazon SES v2 `SendEmail` with simple (text) content from a verified identity. */
export class SesMailer implements Mailer {
  private readonly client = new SESv2Client({ region: Config.region() });

  constructor(private readonly from: string) {}

  async send(message: MailMessage): Promise<{ id: string }> {
    assertHeaderSafe("To", message.to);
    assertHeaderSafe("Subject", message.subject);
    const out = await this.client.send(
      new SendEmailCommand({
        FromEmailAddress: this.from,
        Destination: { ToAddresses: [message.to] },
        Content: {
          Simple: {
            Subject: { Data: message.subject, Charset: "UTF-8" },
            Body: { Text: { Data: message.text, Charset: "UTF-8" } },
          },
        },
      }),
    );
    return { id: out.MessageId ?? "" };
  }
}
