import type { PasswordHasher } from "./auth/passwords.ts";
import { type Config, ConfigError } from "./config.ts";
import type { Store } from "./db/store.ts";
import { NO_DEADLINE } from "./db/write.ts";
import type { Logger } from "./log.ts";
import { isRefusal } from "./refusal.ts";
import { checkNewAccount, type NewAccount } from "./users/account-rules.ts";

type AdminConfig = Pick<
  Config,
  "ADMIN_USERNAME" | "ADMIN_PASSWORD" | "ADMIN_EMAIL" | "ADMIN_NAME"
>;

/** A first admin whose password the service chose: shown once, by printFirstAdmin. */
export interface GeneratedAdmin {
  username: string;
  password: string;
}

/** Which variable holds each field of the first admin. */
const VARIABLE: Record<keyof NewAccount, keyof AdminConfig> = {
  username: "ADMIN_USERNAME",
  name: "ADMIN_NAME",
  email: "ADMIN_EMAIL",
  password: "ADMIN_PASSWORD",
};

/**
 * The first admin that ADMIN_USERNAME/ADMIN_PASSWORD (and ADMIN_EMAIL,
 * ADMIN_NAME or their defaults) describe, checked by the API's own account
 * rules; undefined when the two are not set. A value that breaks a rule
 * throws a ConfigError naming the variable and the rule, so the service does
 * not start rather than make an account the API would refuse (or a password
 * bcrypt would cut short).
 */
export function firstAdminFromEnv(
  config: AdminConfig,
): NewAccount | undefined {
  const { ADMIN_USERNAME: username, ADMIN_PASSWORD: password } = config;
  if (!username || !password) return undefined;
  const checked = checkNewAccount({
    username,
    name: config.ADMIN_NAME ?? "Administrator",
    email: config.ADMIN_EMAIL ?? `${username}@localhost`,
    password,
  });
  if (!checked.ok) {
    const variable = VARIABLE[checked.field];
    const defaulted = config[variable] === undefined ? " (its default)" : "";
    throw new ConfigError(
      `Invalid configuration:\n  ${variable}${defaulted}: ${checked.message}`,
    );
  }
  return checked.account;
}

/**
 * Said when ADMIN_USERNAME names a user that exists: the variables only ever
 * create, and the way to a new password is the recovery task.
 */
const ignoredEnv =
  "ADMIN_PASSWORD ignored: user ADMIN_USERNAME exists, and the environment never changes an existing user; to set a new password run `deno task create-admin --username NAME` (on the embedded database, with the service stopped)";

/**
 * The first administrator: from ADMIN_USERNAME/ADMIN_PASSWORD when no user
 * has that name, else `admin` with a random password when there are no
 * users at all, which it returns for printFirstAdmin. An existing user is
 * never changed from the environment.
 */
export async function ensureFirstAdmin(
  store: Store,
  passwords: PasswordHasher,
  config: AdminConfig,
  log: Logger,
): Promise<GeneratedAdmin | undefined> {
  const fromEnv = firstAdminFromEnv(config);
  if (fromEnv) {
    const { password, ...fields } = fromEnv;
    if (await store.users.findForLogin(fields.username)) {
      log.info(ignoredEnv, { username: fields.username });
      return;
    }
    const outcome = await store.users.createFirst(
      {
        ...fields,
        role: "admin",
        passwordHash: await passwords.hash(password),
      },
      "environment",
      NO_DEADLINE,
    );
    // Refused: another instance created it at the same moment.
    log.info(
      isRefusal(outcome)
        ? ignoredEnv
        : "created the first admin from ADMIN_USERNAME",
      { username: fields.username },
    );
    return;
  }
  if (await store.users.count() > 0) return;
  const generated = randomPassword();
  const outcome = await store.users.createFirst(
    {
      username: "admin",
      name: "Administrator",
      email: "admin@localhost",
      role: "admin",
      passwordHash: await passwords.hash(generated),
    },
    "generated",
    NO_DEADLINE,
  );
  if (isRefusal(outcome)) return;
  return { username: "admin", password: generated };
}

/**
 * The generated credentials, once, on stderr: not a log line, so log
 * collectors that keep stdout's JSON keep no password. The service prints it
 * after "listening", as the last thing of a first start, set apart from what
 * came before (the first run's package downloads), with where to use it.
 */
export function printFirstAdmin(
  admin: GeneratedAdmin,
  baseUrl: string,
  write: (text: string) => void = (text) => console.error(text),
): void {
  const rule = "=".repeat(72);
  write(
    [
      "",
      "",
      rule,
      "  First start: no users existed, so this administrator was created.",
      "",
      `    username: ${admin.username}`,
      `    password: ${admin.password}`,
      "",
      `  Sign in at ${baseUrl}/admin, the console. The API's documentation,`,
      `  to try each call, is at ${baseUrl}/docs. The password is shown only`,
      `  this once.`,
      rule,
      "",
    ].join("\n"),
  );
}

/** 18 random bytes, base64url: 24 characters, well inside bcrypt's 72 bytes. */
export function randomPassword(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(18));
  return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-")
    .replaceAll("/", "_");
}
