/**
 * Recovery when no admin can log in: creates an admin, or makes an existing
 * user (the same name under the canonical key) an admin with a new password,
 * ending that user's sessions and lifting the login throttle of the name
 * from every address. Either is recorded in the audit trail
 * (`admin.recovered`) in the same transaction.
 *
 *   deno task create-admin --username NAME [--password PW] [--email E] [--name N]
 *   deno task create-admin --username NAME --reset-mfa
 *
 * With --reset-mfa it changes nothing but the user's second factors: their
 * TOTP, passkeys and recovery codes are removed and their sessions end
 * (`mfa.reset`, no actor), for someone who lost them; their password and
 * role stay.
 *
 * Without --password, a random one is generated and printed. Uses the same
 * DATABASE_URL / DATA_DIR as the service (stop the service first when it runs
 * on the embedded database: PGlite has one owner at a time).
 */
import { parseArgs } from "node:util";
import { createPasswordHasher } from "../auth/passwords.ts";
import { randomPassword } from "../bootstrap.ts";
import { NO_REQUEST } from "../audit/events.ts";
import { createStore } from "../db/store.ts";
import { NO_DEADLINE } from "../db/write.ts";
import { isRefusal } from "../refusal.ts";
import { checkNewAccount } from "../users/account-rules.ts";
import {
  openTaskDatabase,
  runAsProcess,
  taskConfig,
  type TaskMain,
} from "./task.ts";

const USAGE =
  "usage: deno task create-admin --username NAME [--password PW] [--email E] [--name N]\n" +
  "       deno task create-admin --username NAME --reset-mfa";

export const createAdmin: TaskMain = async (args, env, out) => {
  const { values } = parseArgs({
    args,
    options: {
      username: { type: "string" },
      password: { type: "string" },
      email: { type: "string" },
      name: { type: "string" },
      "reset-mfa": { type: "boolean" },
    },
  });
  if (!values.username) {
    out.error(USAGE);
    return 1;
  }

  const config = taskConfig(env, out);
  if (!config) return 1;
  if (values["reset-mfa"]) return await resetMfa(values.username, config, out);

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
    const factored = (await store.users.findForLogin(username))?.mfaEnabled;
    const outcome = await store.users.upsertAdmin({
      username,
      name,
      email,
      passwordHash: await createPasswordHasher(config.BCRYPT_COST).hash(
        password,
      ),
    }, NO_DEADLINE);
    await store.stop();
    if (isRefusal(outcome)) {
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
    // A new password alone does not get back in past a lost second factor.
    if (outcome !== "created" && factored) {
      out.log(
        `They keep their second factor: if it is lost, run deno task create-admin --username ${username} --reset-mfa`,
      );
    }
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

/** `--reset-mfa`: the named user's second factors go, and their sessions end. */
async function resetMfa(
  username: string,
  config: NonNullable<ReturnType<typeof taskConfig>>,
  out: Parameters<TaskMain>[2],
) {
  const db = await openTaskDatabase(config, out);
  if (!db) return 1;
  const store = createStore(db.sql);
  try {
    const user = await store.users.findForLogin(username);
    const reset = user && await store.mfa.resetByTask(user.id, NO_REQUEST);
    await store.stop();
    if (!reset) {
      out.error(`Failed: no user "${username}".`);
      return 1;
    }
    out.log(
      `User "${user.username}" has no second factor now; their sessions ended.`,
    );
    return 0;
  } catch (e) {
    await store.stop().catch(() => {});
    out.error(`Failed: ${(e as Error).message}`);
    return 1;
  } finally {
    await db.close();
  }
}

if (import.meta.main) await runAsProcess(createAdmin);
