/**
 * A consumer of the SDK that @hey-api/openapi-ts generates from
 * openapi/openapi.yaml (in ./sdk beside it), compiled with `tsc --strict`
 * and run on Node by tests/heyapi_test.ts. It calls every operation and
 * checks each answer; the first wrong one throws, naming it.
 */
import { client } from "./sdk/client.gen.js";
import * as sdk from "./sdk/sdk.gen.js";
import type { AuditParty, AuditRecord } from "./sdk/types.gen.js";

// Node's one global used here (no @types/node in this project).
declare const process: { env: Record<string, string> };
const { BASE_URL, ADMIN_USERNAME, ADMIN_PASSWORD } = process.env;

function check(ok: boolean, what: string, got?: unknown): asserts ok {
  if (!ok) throw new Error(`${what}: got ${JSON.stringify(got)}`);
}

// The document's server: a generated client has a base URL of its own.
check(
  client.getConfig().baseUrl === "http://127.0.0.1:8000",
  "the document's server URL",
  client.getConfig().baseUrl,
);

// The session: the cookie `login` sets, sent by every call that declares
// it; an API key for `bearerAuth` once one is made. Each scheme gets its
// own credential (a token for the wrong scheme would be refused: an
// Authorization header decides alone).
let sid: string | undefined;
let apiKey: string | undefined;
client.setConfig({
  baseUrl: BASE_URL,
  auth: (scheme) => scheme.in === "cookie" ? sid : apiKey,
});

const wrong = await sdk.login({
  body: { username: ADMIN_USERNAME, password: "not the password" },
});
check(wrong.response.status === 401, "login, wrong password", wrong.error);
check(
  wrong.error?.error === "Invalid username or password",
  "401 message",
  wrong.error,
);

const login = await sdk.login({
  body: { username: ADMIN_USERNAME, password: ADMIN_PASSWORD },
});
check(login.data?.username === ADMIN_USERNAME, "login", login.error);
sid = login.response.headers.getSetCookie()
  .map((c) => /^sid=([^;]*)/.exec(c)?.[1]).find((v) => v);
check(sid !== undefined, "the sid cookie of login");

const me = await sdk.me();
check(me.data?.role === "admin", "me", me.error);
const meHead = await sdk.meHead();
check(meHead.response.status === 200, "HEAD me", meHead.response.status);

const fields = {
  username: "heyapi",
  name: "Hey API",
  email: "heyapi@example.com",
  password: "correct horse",
  role: "viewer" as const,
};
const created = await sdk.createUser({ body: fields });
check(created.response.status === 201, "createUser", created.error);
const id = created.data!.id;
check(
  created.response.headers.get("location") === `/api/users/${id}`,
  "Location",
  created.response.headers.get("location"),
);
check(
  !Number.isNaN(Date.parse(created.data!.createdAt)),
  "createdAt is a date-time",
  created.data,
);

const duplicate = await sdk.createUser({ body: fields });
check(
  duplicate.response.status === 409,
  "duplicate",
  duplicate.response.status,
);
check(
  duplicate.error?.error === "Username or email already exists",
  "409 message",
  duplicate.error,
);
const short = await sdk.createUser({
  body: { ...fields, username: "other", password: "short" },
});
check(
  short.error?.error === "Password must be at least 8 characters",
  "400 message",
  short.error,
);

// One user: its ETag, a 304 while it is current, and HEAD's same headers.
const got = await sdk.getUser({ path: { id } });
check(got.data?.username === "heyapi", "getUser", got.error);
const etag = got.response.headers.get("etag");
check(etag !== null, "ETag of getUser");
const unchanged = await sdk.getUser({
  path: { id },
  headers: { "if-none-match": etag },
});
// hey-api keeps no 3XX in its response types: the status says 304.
check(
  unchanged.response.status === 304 && unchanged.data === undefined &&
    unchanged.response.headers.get("etag") === etag,
  "304 with the same ETag",
  unchanged.response.status,
);
const head = await sdk.getUserHead({ path: { id } });
check(
  head.response.status === 200 && head.response.headers.get("etag") === etag,
  "HEAD getUser",
  head.response.status,
);
const missing = await sdk.getUser({ path: { id: 2147483647 } });
check(missing.error?.error === "User not found", "404", missing.error);

// The list: a page and its Link, a 304, HEAD.
const page = await sdk.listUsers({ query: { limit: 1 } });
check(page.data?.length === 1, "listUsers limit=1", page.error);
check(
  /rel="next"/.test(page.response.headers.get("link") ?? ""),
  "Link of a cut page",
  page.response.headers.get("link"),
);
const all = await sdk.listUsers();
check(all.data?.length === 2, "listUsers", all.data);
const listTag = all.response.headers.get("etag")!;
const listUnchanged = await sdk.listUsers({
  headers: { "if-none-match": listTag },
});
check(listUnchanged.response.status === 304, "list 304", listUnchanged.error);
const listHead = await sdk.listUsersHead({ query: { role: "admin" } });
check(listHead.response.status === 200, "HEAD listUsers", listHead.error);
const badQuery = await sdk.listUsers({ query: { limit: 0 } });
check(
  badQuery.error?.error === "Invalid query parameter: limit",
  "list 400",
  badQuery.error,
);

// Changes: a role, a stale If-Match, a delete.
const promoted = await sdk.updateUser({
  path: { id },
  body: { role: "admin" },
});
check(promoted.data?.role === "admin", "updateUser", promoted.error);
const stale = await sdk.updateUser({
  path: { id },
  headers: { "if-match": etag },
  body: { role: "viewer" },
});
check(stale.error?.error === "Precondition failed", "412", stale.error);
const self = await sdk.deleteUser({ path: { id: login.data!.id } });
check(
  self.error?.error === "You cannot delete your own account",
  "delete self",
  self.error,
);
const deleted = await sdk.deleteUser({ path: { id } });
check(deleted.data?.ok === true, "deleteUser", deleted.error);

// The audit trail: `since` as a date alone, `until` as a date-time.
const audit = await sdk.listAuditEvents({
  query: { since: "2000-01-01", until: "2999-01-01T00:00:00Z", limit: 100 },
});
check((audit.data?.length ?? 0) >= 4, "listAuditEvents", audit.error);
const records: AuditRecord[] = audit.data!;
const parties: (AuditParty | null)[] = records.flatMap((r) => [
  r.actor,
  r.target,
]);
check(parties.includes(null), "a record without an actor", records);
check(
  !Number.isNaN(Date.parse(records[0].time)),
  "time is a date-time",
  records[0],
);
const badSince = await sdk.listAuditEvents({ query: { since: "yesterday" } });
check(
  badSince.error?.error === "Invalid query parameter: since",
  "audit 400",
  badSince.error,
);
const auditHead = await sdk.listAuditEventsHead();
check(auditHead.response.status === 200, "HEAD audit", auditHead.error);

// Health, without a session.
for (const probe of [sdk.health, sdk.healthLive, sdk.healthReady]) {
  const answer = await probe();
  check(answer.data?.status === "ok", "health", answer.error);
}

// API keys: made, listed, used alone (no cookie), revoked.
const key = await sdk.createApiKey({
  path: { id: login.data!.id },
  body: { name: "heyapi" },
});
check(key.response.status === 201, "create key", key.error);
const badKey = await sdk.createApiKey({
  path: { id: login.data!.id },
  body: { name: "" },
});
check(
  badKey.error?.error === "Invalid API key request",
  "key 400",
  badKey.error,
);
const keys = await sdk.listApiKeys({ path: { id: login.data!.id } });
check(keys.data?.[0]?.id === key.data!.id, "list keys", keys.error);
const session = sid;
sid = undefined;
apiKey = key.data!.key;
const byKey = await sdk.me();
check(byKey.data?.username === ADMIN_USERNAME, "me with a key", byKey.error);
const replayed = await sdk.createUser({
  body: { ...fields, username: "keyed", email: "keyed@example.com" },
  headers: { "idempotency-key": "heyapi-1" },
});
check(replayed.response.status === 201, "create with a key", replayed.error);
const again = await sdk.createUser({
  body: { ...fields, username: "keyed", email: "keyed@example.com" },
  headers: { "idempotency-key": "heyapi-1" },
});
check(
  again.response.headers.get("idempotent-replayed") === "true",
  "replay",
  again.response.status,
);
apiKey = undefined;
sid = session;
const revoked = await sdk.revokeApiKey({
  path: { id: login.data!.id, keyId: key.data!.id },
});
check(revoked.data?.ok === true, "revoke key", revoked.error);
const gone = await sdk.revokeApiKey({
  path: { id: login.data!.id, keyId: key.data!.id },
});
check(gone.error?.error === "API key not found", "key 404", gone.error);

// Logout sends the cookie and ends the session: the same cookie is refused.
const out = await sdk.logout();
check(out.data?.ok === true, "logout", out.error);
const after = await sdk.me();
check(after.response.status === 401, "me after logout", after.response.status);
check(after.error?.error === "Unauthorised", "401 message", after.error);

console.log("all operations answered as the document says");
