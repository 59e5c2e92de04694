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
import { createStore } from "../db/store.ts";
import { NO_DEADLINE } from "../db/write.ts";
import { checkNewAccount } from "../users/account-rules.ts";
import {
  openTaskDatabase,
  runAsProcess,
  taskConfig,
  type TaskMain,
} from "./task.ts";

const USAGE =
  "usage: deno task create-admin --username NAME [--password PW] [--email E] [--name N]";

export const createAdmin: TaskMain = async (args, env, out) => {
  const { values } = parseArgs({
    args,
    options: {
      username: { type: "string" },
      password: { type: "string" },
      email: { type: "string" },
      name: { type: "string" },
    },
  });
  if (!values.username) {
    out.error(USAGE);
    return 1;
  }

  const config = taskConfig(env, out);
  if (!config) return 1;

  const password = values.password ?? randomPassword();
  // The same rules as the API's, so the CLI cannot make an account the API would refuse.
  const checked = checkNewAccount({
    username: values.username,
    name: values.name ?? "Administrator",
    email: values.email ?? `${values.username}@localhost`,
    password,
  });
  if (!checked.ok) {
    out.error(`--${checked.field}: ${checked.message}`);
    return 1;
  }

  const db = await openTaskDatabase(config, out);
  if (!db) return 1;
  const store = createStore(db.sql);
  try {
    const { username, name, email } = checked.account;
    const outcome = await store.users.upsertAdmin({
      username,
      name,
      email,
      passwordHash: await createPasswordHasher(config.BCRYPT_COST).hash(
        password,
      ),
    }, NO_DEADLINE);
    await store.stop();
    if (outcome === "duplicate") {
      out.error(
        `Failed: another user has the e-mail, or a username that looks like "${username}".`,
      );
      return 1;
    }
    out.log(
      outcome === "created"
        ? `Created admin "${username}".`
        : `User "${username}" is now an admin with a new password.`,
    );
    if (!values.password) out.log(`Password: ${password}`);
    return 0;
  } catch (e) {
    // Run in a test's isolate, no seal may stay scheduled on the connection
    // closed below; the failure reported is this one, not the seal's.
    await store.stop().catch(() => {});
    out.error(`Failed: ${(e as Error).message}`);
    return 1;
  } finally {
    await db.close();
  }
};

if (import.meta.main) await runAsProcess(createAdmin);
