/**
 * Recovery when no admin can log in: creates an admin, or makes an existing
 * user (the same name under the canonical key) an admin with a new password,
 * ending that user's sessions and lifting the login throttle of the name
 * from every address. Either is recorded in the audit trail
 * (`admin.recovered`) in the same transaction.
 *
 *   deno task create-admin --username NAME [--password PW] [--email E] [--name N]
 *
 * Without --password, a random one is generated and printed. Uses the same
 * DATABASE_URL / DATA_DIR as the service (stop the service first when it runs
 * on the embedded database: PGlite has one owner at a time).
 */
import { parseArgs } from "node:util";
import { createPasswordHasher } from "../auth/passwords.ts";
import { randomPassword } from "../bootstrap.ts";
import { ConfigError, loadConfig } from "../config.ts";
import { openDatabase } from "../db/database.ts";
import { createStore, NO_DEADLINE } from "../db/store.ts";
import { checkNewAccount } from "../users/account-rules.ts";

function fail(message: string): never {
  console.error(message);
  Deno.exit(1);
}

const { values } = parseArgs({
  args: Deno.args,
  options: {
    username: { type: "string" },
    password: { type: "string" },
    email: { type: "string" },
    name: { type: "string" },
  },
});
if (!values.username) {
  fail(
    "usage: deno task create-admin --username NAME [--password PW] [--email E] [--name N]",
  );
}

let config;
try {
  config = loadConfig();
} catch (e) {
  if (e instanceof ConfigError) fail(e.message);
  throw e;
}

const password = values.password ?? randomPassword();
// The same rules as the API's, so the CLI cannot make an account the API would refuse.
const checked = checkNewAccount({
  username: values.username,
  name: values.name ?? "Administrator",
  email: values.email ?? `${values.username}@localhost`,
  password,
});
if (!checked.ok) fail(`--${checked.field}: ${checked.message}`);

const db = await openDatabase(config).catch((e) =>
  fail(`Cannot open the database: ${e.message}`)
);
try {
  const { username, name, email } = checked.account;
  const store = createStore(db.sql);
  const outcome = await store.users.upsertAdmin({
    username,
    name,
    email,
    passwordHash: await createPasswordHasher(config.BCRYPT_COST).hash(password),
  }, NO_DEADLINE);
  await store.stop();
  console.log(
    outcome === "created"
      ? `Created admin "${username}".`
      : `User "${username}" is now an admin with a new password.`,
  );
  if (!values.password) console.log(`Password: ${password}`);
} catch (e) {
  fail(`Failed: ${(e as Error).message}`);
} finally {
  await db.close();
}
