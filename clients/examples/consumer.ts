/**
 * A consumer service's code, end to end: an onboarding job that makes sure
 * an account exists with the role it should have. CI type-checks this file
 * and runs it against a live service (tests/client_consumer_test.ts).
 *
 *   USER_ADMIN_URL=http://127.0.0.1:8000 USER_ADMIN_USERNAME=root \
 *   USER_ADMIN_PASSWORD='a long passphrase' \
 *   deno run --allow-net --allow-env clients/examples/consumer.ts alice alice@example.com viewer
 */
import {
  createUserAdminClient,
  type Role,
  type UserAdminClient,
} from "@user-admin/client";

export interface Wanted {
  username: string;
  name: string;
  email: string;
  role: Role;
  /** Used only when the account is new. */
  initialPassword: string;
}

/** Creates the account, or brings an existing one's role in line. */
export async function ensureAccount(
  api: UserAdminClient,
  wanted: Wanted,
): Promise<"created" | "role changed" | "unchanged"> {
  const { initialPassword, ...fields } = wanted;
  const created = await api.post("/api/users", {
    body: { ...fields, password: initialPassword },
  });
  if (created.ok) return "created";
  if (created.status !== 409) {
    // created.error is one of the contract's messages for POST /api/users.
    throw new Error(`create ${wanted.username}: ${created.error}`);
  }

  // One lookup under the service's canonical key, however many users exist.
  const found = await api.findByUsername(wanted.username);
  if (!found.ok) throw new Error(`look up ${wanted.username}: ${found.error}`);
  const existing = found.data;
  if (!existing) {
    throw new Error(`${wanted.email} belongs to another account`);
  }
  if (existing.role === wanted.role) return "unchanged";

  const updated = await api.patch("/api/users/{id}", {
    params: { path: { id: existing.id } },
    body: { role: wanted.role },
  });
  if (!updated.ok) {
    throw new Error(
      `update ${existing.id}: ${updated.status} ${updated.error}`,
    );
  }
  return "role changed";
}

export interface Connection {
  baseUrl: string;
  username: string;
  password: string;
}

/** Logs in, ensures each account, logs out; answers what happened to each. */
export async function onboard(
  connection: Connection,
  accounts: Wanted[],
): Promise<Record<string, string>> {
  const api = createUserAdminClient({ baseUrl: connection.baseUrl });
  const login = await api.login(connection.username, connection.password);
  if (!login.ok) {
    // 401 "Invalid username or password", 429 "Too many login attempts", ...
    throw new Error(`login: ${login.status} ${login.error}`);
  }
  if (login.data.role !== "admin") {
    throw new Error("an admin account is needed");
  }
  try {
    const done: Record<string, string> = {};
    for (const account of accounts) {
      done[account.username] = await ensureAccount(api, account);
    }
    return done;
  } finally {
    await api.logout();
  }
}

if (import.meta.main) {
  const env = (name: string) => {
    const value = Deno.env.get(name);
    if (!value) throw new Error(`${name} is not set`);
    return value;
  };
  const [username, email, role = "viewer"] = Deno.args;
  if (!username || !email || (role !== "admin" && role !== "viewer")) {
    console.error("usage: consumer.ts USERNAME EMAIL [admin|viewer]");
    Deno.exit(2);
  }
  const done = await onboard({
    baseUrl: env("USER_ADMIN_URL"),
    username: env("USER_ADMIN_USERNAME"),
    password: env("USER_ADMIN_PASSWORD"),
  }, [{
    username,
    name: username,
    email,
    role,
    initialPassword: crypto.randomUUID(),
  }]);
  console.log(JSON.stringify(done));
}
