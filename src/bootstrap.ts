import type { PasswordHasher } from "./auth/passwords.ts";
import type { Config } from "./config.ts";
import type { Store } from "./db/store.ts";
import type { Logger } from "./log.ts";

type AdminConfig = Pick<
  Config,
  "ADMIN_USERNAME" | "ADMIN_PASSWORD" | "ADMIN_EMAIL" | "ADMIN_NAME"
>;

/**
 * The first administrator: from ADMIN_USERNAME/ADMIN_PASSWORD when no user
 * has that name, else `admin` with a random password when there are no
 * users at all. An existing user is never changed from the environment.
 */
export async function ensureFirstAdmin(
  store: Store,
  passwords: PasswordHasher,
  config: AdminConfig,
  log: Logger,
): Promise<void> {
  const { ADMIN_USERNAME: username, ADMIN_PASSWORD: password } = config;
  if (username && password) {
    if (await store.users.findForLogin(username)) return;
    const outcome = await store.users.createFirstAdmin({
      username,
      name: config.ADMIN_NAME ?? "Administrator",
      email: config.ADMIN_EMAIL ?? `${username}@localhost`,
      role: "admin",
      passwordHash: await passwords.hash(password),
    }, "environment");
    // "duplicate": another instance created it at the same moment.
    if (outcome !== "duplicate") {
      log.info("created the first admin from ADMIN_USERNAME", { username });
    }
    return;
  }
  if (await store.users.count() > 0) return;
  const generated = randomPassword();
  const outcome = await store.users.createFirstAdmin({
    username: "admin",
    name: "Administrator",
    email: "admin@localhost",
    role: "admin",
    passwordHash: await passwords.hash(generated),
  }, "generated");
  if (outcome === "duplicate") return;
  // Printed once, on purpose: the only way to learn it. Not a log line, so
  // log collectors that drop stdout JSON keep nothing.
  console.error(
    `\nNo users existed, so user "admin" was created with password: ${generated}\n` +
      `Log in and change it, or set ADMIN_USERNAME and ADMIN_PASSWORD.\n`,
  );
}

/** 18 random bytes, base64url: 24 characters, well inside bcrypt's 72 bytes. */
export function randomPassword(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(18));
  return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-")
    .replaceAll("/", "_");
}
