import { parseArgs } from "node:util";
import { resolve } from "node:path";
import { devIdp } from "./idp";

/**
 * `npm run token -- --email you@example.com [--name "Ada"] [--admin] [--hours 8]`: print a JWT signed by the
 * dev identity provider (its key lives in .data/idp). The same e-mail is always the same user.
 */
async function main() {
  const { values } = parseArgs({
    options: {
      email: { type: "string" },
      name: { type: "string" },
      admin: { type: "boolean", default: false },
      hours: { type: "string", default: "8" },
      data: { type: "string" },
    },
  });
  if (!values.email || !/^[^@\s]+@[^@\s]+$/.test(values.email)) {
    console.error('Usage: npm run token -- --email you@example.com [--name "Your Name"] [--admin] [--hours 8]');
    process.exit(2);
  }
  const idp = await devIdp(resolve(values.data ?? process.env.DATA_DIR ?? ".data"));
  const token = await idp.sign({
    email: values.email,
    name: values.name,
    groups: values.admin ? ["admin"] : undefined,
    expiresIn: Math.round(Number(values.hours) * 3600),
  });
  process.stdout.write(`${token}\n`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
