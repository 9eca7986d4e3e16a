import { parseArgs } from "node:util";
import { resolve } from "node:path";
import { devIdp } from "./idp";
import { Config } from "../core/config";
import { PrerequisiteError } from "./errors";

/**
 * `npm run -s token -- --email you@example.com [--name "Ada"] [--admin] [--hours 8]`: print a JWT signed by the
 * dev identity provider (its key lives in .data/idp). The same e-mail is always the same user.
 */
const USAGE = `Usage: npm run -s token -- --email you@example.com [--name "Your Name"] [--admin] [--hours 8] [--data DIR]

Prints an access token for the running \`npm start\`, signed by its dev identity provider. The same e-mail is
always the same user. -s keeps npm's own lines out of the output, so this works:

  TOKEN=$(npm run -s token -- --email you@example.com)
  curl -H "Authorization: Bearer $TOKEN" http://127.0.0.1:3000/api/auth/me

Options:
  --email   the user's e-mail (required)
  --name    the user's display name
  --admin   put the user in the admin group (the access-code endpoints)
  --hours   how long the token is valid, in hours (default 8)
  --data    the data directory of \`npm start\` (default: $DATA_DIR, else .data); its identity provider's key is
            there, and a token signed with another directory's key is refused
  --help    print this text
`;

/** A mistake on the command line: one sentence on stderr and exit code 2, the shell convention for bad usage. */
class UsageError extends Error {}

function parse(args: string[]) {
  try {
    return parseArgs({
      args,
      strict: true,
      options: {
        email: { type: "string" },
        name: { type: "string" },
        admin: { type: "boolean", default: false },
        hours: { type: "string", default: "8" },
        data: { type: "string" },
        help: { type: "boolean", short: "h", default: false },
      },
    }).values;
  } catch (err) {
    // parseArgs names the problem in its first sentence ("Unknown option '--x'"); the lines after it are advice.
    const first = (err as Error).message.split(/\.\s|\n/)[0]!.replace(/\.$/, "");
    throw new UsageError(`${first} (npm run -s token -- --help lists the options).`);
  }
}

async function main() {
  const values = parse(process.argv.slice(2));
  if (values.help) {
    process.stdout.write(USAGE);
    return;
  }
  if (!values.email || !/^[^@\s]+@[^@\s]+$/.test(values.email)) {
    throw new UsageError("An e-mail is required, as in: npm run -s token -- --email you@example.com");
  }
  const hours = Number(values.hours);
  if (!(hours > 0)) throw new UsageError(`--hours must be a positive number of hours, not "${values.hours}".`);
  // The service refuses tokens that live longer than JWT_MAX_LIFETIME_SECONDS (functions/lib/auth.ts).
  const maxHours = Config.jwtMaxLifetimeSeconds() / 3600;
  if (hours > maxHours) throw new UsageError(`--hours can be at most ${maxHours}: the service refuses longer-lived tokens (JWT_MAX_LIFETIME_SECONDS).`);
  const idp = await devIdp(resolve(values.data ?? process.env.DATA_DIR ?? ".data"));
  const token = await idp.sign({
    email: values.email,
    name: values.name,
    groups: values.admin ? ["admin"] : undefined,
    expiresIn: Math.round(hours * 3600),
  });
  process.stdout.write(`${token}\n`);
}

main().catch((err: unknown) => {
  if (err instanceof UsageError) {
    console.error(err.message);
    process.exit(2);
  }
  if (err instanceof PrerequisiteError) {
    console.error(err.message);
    process.exit(1);
  }
  // Anything else is a bug: keep its stack.
  console.error(err);
  process.exit(1);
});
