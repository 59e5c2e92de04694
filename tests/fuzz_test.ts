/**
 * Property tests: request bodies drawn from the route schemas' own rules and
 * from far outside them, sent over real HTTP. Whatever comes in, the service
 * answers a status its contract allows, every error body is exactly
 * `{error}`, and nothing is stored unless a 2xx said so.
 */
import fc from "fast-check";
import { MSG } from "../src/http/messages.ts";
import { assert, assertEquals } from "./support/assert.ts";
import {
  ADMIN,
  loginCookie,
  startService,
  type TestService,
} from "./support/service.ts";

const RUNS = 120;
const ROLES = ["admin", "viewer"] as const;

// ---- generators ------------------------------------------------------------

const unicode = fc.string({ unit: "grapheme", maxLength: 40 });
const binaryish = fc.string({ unit: "binary", maxLength: 40 });

/** Values of the wrong kind for any field. */
const junk: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.constant(""),
  fc.constant("   "),
  fc.boolean(),
  fc.integer(),
  fc.double(),
  unicode,
  binaryish,
  fc.constantFrom("\u0000", "a\u0000b", "\ud800", "\u202e", "é", "𝔘", "\r\n"),
  fc.string({ minLength: 60, maxLength: 400 }),
  fc.constant("x".repeat(70_000)), // over the 64 KiB body limit
  fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 2 }), {
    maxKeys: 3,
  }),
);

/** Fields that pass the CreateUser rules (trimmed, limits, one @). */
const validUsername = fc.stringMatching(/^[a-z][a-z0-9_.-]{0,20}$/);
const validName = fc.oneof(
  fc.stringMatching(/^[A-Z][a-z]{0,20}( [A-Z][a-z]{0,20})?$/),
  fc.string({ unit: "grapheme", minLength: 1, maxLength: 50 }).filter((s) =>
    s.trim().length > 0 && !s.includes("\u0000")
  ),
);
const validPassword = fc.oneof(
  fc.string({ unit: "grapheme-ascii", minLength: 8, maxLength: 72 }),
  fc.constantFrom(
    "correct horse",
    "ünïcödé-pässwörd",
    "        ",
    "🔑🔑🔑🔑🔑🔑🔑🔑",
  ),
);
const role = fc.constantFrom(...ROLES);

const field = <T>(valid: fc.Arbitrary<T>) =>
  fc.oneof({ arbitrary: valid, weight: 4 }, { arbitrary: junk, weight: 1 });

/** A CreateUser body: mostly by its rules, sometimes a field broken or missing, plus extras. */
const createBody = fc.record({
  username: field(validUsername),
  name: field(validName),
  email: field(validUsername.map((u) => `${u}@example.com`)),
  password: field(validPassword),
  role: field(role),
  id: fc.option(fc.integer(), { nil: undefined }),
  createdAt: fc.option(fc.string(), { nil: undefined }),
  password_hash: fc.option(fc.constant("$2b$04$planted"), { nil: undefined }),
}, { requiredKeys: [] });

const updateBody = fc.record({
  role: fc.oneof(role, fc.constant(""), junk),
  password: fc.oneof(validPassword, fc.constant(""), junk),
}, { requiredKeys: [] });

const loginBody = fc.record({
  username: fc.oneof(fc.constant("admin"), fc.constant(" ADMIN "), junk),
  password: fc.oneof(fc.constant(ADMIN.password), junk),
}, { requiredKeys: [] });

const encode = (s: string) =>
  new TextEncoder().encode(s) as Uint8Array<ArrayBuffer>;

/** Raw bodies: JSON of the object, with duplicate keys, or not JSON at all. */
const bodyOf = (object: fc.Arbitrary<Record<string, unknown>>) =>
  fc.oneof(
    { arbitrary: object.map((o) => encode(JSON.stringify(o))), weight: 6 },
    {
      // Duplicate keys: JSON.parse keeps the last one.
      arbitrary: fc.tuple(object, object).map(([a, b]) => {
        const inner = (o: object) => JSON.stringify(o).slice(1, -1);
        const parts = [inner(a), inner(b)].filter(Boolean);
        return encode(`{${parts.join(",")}}`);
      }),
      weight: 2,
    },
    {
      // Valid JSON that is not an object, or nested junk.
      arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) =>
        encode(JSON.stringify(v) ?? "null")
      ),
      weight: 1,
    },
    { arbitrary: unicode.map(encode), weight: 1 }, // mostly not JSON
    {
      // Invalid UTF-8 inside otherwise plausible JSON.
      arbitrary: fc.uint8Array({ minLength: 1, maxLength: 8 }).map((junk) =>
        new Uint8Array([
          ...encode('{"username":"'),
          0xff,
          ...junk,
          0x22,
          0x7d,
        ]) as Uint8Array<ArrayBuffer>
      ),
      weight: 1,
    },
    { arbitrary: fc.constant(encode("")), weight: 1 },
  );

const contentType = fc.option(
  fc.constantFrom(
    "application/json",
    "application/json; charset=utf-8",
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=xyz",
    "application/xml",
    "",
    ";;;",
  ),
  { nil: undefined },
);

/** Whether the bytes are JSON as the service must read them (UTF-8). */
function parses(bytes: Uint8Array) {
  try {
    JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    return true;
  } catch {
    return false;
  }
}

// ---- harness ---------------------------------------------------------------

async function send(
  svc: TestService,
  cookie: string,
  method: string,
  path: string,
  body: Uint8Array<ArrayBuffer>,
  type: string | undefined,
) {
  const headers: Record<string, string> = { cookie };
  if (type !== undefined) headers["content-type"] = type;
  const res = await svc.fetch(path, {
    method,
    headers,
    body: method === "GET" ? undefined : body,
  });
  const text = await res.text();
  return { status: res.status, type: res.headers.get("content-type"), text };
}

/** Error answers are exactly `{error: <one of the allowed messages>}` as JSON. */
function assertErrorBody(
  answer: { status: number; type: string | null; text: string },
  allowed: readonly string[],
) {
  assertEquals(answer.type, "application/json");
  const body = JSON.parse(answer.text);
  assertEquals(Object.keys(body), ["error"]);
  assert(allowed.includes(body.error), `${answer.status} ${body.error}`);
}

const USER_KEYS = ["createdAt", "email", "id", "name", "role", "username"];

// ---- properties ------------------------------------------------------------

Deno.test("any body POSTed to /api/users gets a contract answer, and the list holds exactly the 201s", async () => {
  await using svc = await startService();
  const cookie = await loginCookie(svc);
  const created = new Map<number, Record<string, unknown>>();
  const CREATE_400 = [
    MSG.allFieldsRequired,
    MSG.roleMustBeAdminOrViewer,
    MSG.passwordTooShort,
    MSG.usernameInvalid,
    MSG.nameTooLong,
    MSG.emailInvalid,
    MSG.passwordTooLong,
    MSG.invalidBody,
  ];
  const nul = (fields: Record<string, string>) =>
    encode(JSON.stringify({
      username: "nul",
      name: "Nul",
      email: "nul@example.com",
      password: "nul-password",
      role: "viewer",
      ...fields,
    }));
  // PostgreSQL text cannot hold U+0000: these once answered 500.
  const examples: [Uint8Array<ArrayBuffer>, string | undefined][] = [
    [nul({ name: "a\u0000b" }), undefined],
    [nul({ email: "a\u0000b@example.com" }), undefined],
    [nul({ username: "a\u0000b" }), undefined],
    [nul({ password: "pass\u0000word" }), undefined],
  ];
  await fc.assert(
    fc.asyncProperty(bodyOf(createBody), contentType, async (body, type) => {
      const answer = await send(svc, cookie, "POST", "/api/users", body, type);
      switch (answer.status) {
        case 201: {
          const user = JSON.parse(answer.text);
          assertEquals(Object.keys(user).sort(), USER_KEYS);
          assert(!created.has(user.id));
          created.set(user.id, user);
          return;
        }
        case 400:
          return assertErrorBody(answer, CREATE_400);
        case 409:
          return assertErrorBody(answer, [MSG.duplicateUser]);
        case 413:
          assert(body.length > 64 * 1024);
          return assertErrorBody(answer, [MSG.bodyTooLarge]);
        case 500:
          assert(!parses(body), `500 for a parsable body: ${answer.text}`);
          return assertErrorBody(answer, [MSG.createFailed]);
        default:
          throw new Error(`unexpected ${answer.status} ${answer.text}`);
      }
    }),
    { numRuns: RUNS, examples },
  );
  assert(created.size > 10, `only ${created.size} users were created`);
  const list = await svc.admin.GET("/api/users");
  const others = list.data!.filter((u) => u.id !== svc.adminAccount.id);
  assertEquals(
    others.sort((a, b) => a.id - b.id),
    [...created.values()].sort((a, b) => Number(a.id) - Number(b.id)),
  );
  // No planted hash made it: every stored hash is a real bcrypt hash of cost >= 10.
  const hashes = await svc.sql<{ h: string }[]>`
    select password_hash as h from users`;
  for (const { h } of hashes) assert(/^\$2[aby]\$1\d\$/.test(h), h);
});

Deno.test("fresh valid bodies are always created, whatever the Content-Type says", async () => {
  await using svc = await startService();
  const cookie = await loginCookie(svc);
  let n = 0;
  await fc.assert(
    fc.asyncProperty(
      validName,
      validPassword,
      role,
      contentType,
      async (name, password, role, type) => {
        const username = `fresh${++n}`;
        const body = {
          username,
          name,
          email: `${username}@x.io`,
          password,
          role,
        };
        const answer = await send(
          svc,
          cookie,
          "POST",
          "/api/users",
          encode(JSON.stringify(body)),
          type,
        );
        assertEquals(answer.status, 201, answer.text);
        const user = JSON.parse(answer.text);
        assertEquals(
          { username: user.username, name: user.name, role: user.role },
          { username, name: name.trim(), role },
        );
      },
    ),
    { numRuns: 40 },
  );
});

Deno.test("any body PATCHed to a user gets a contract answer, and only a 200 changes the row", async () => {
  await using svc = await startService();
  const cookie = await loginCookie(svc);
  const target = await svc.userClient("viewer");
  const id = target.account.id;
  const row = async () => {
    const [r] = await svc.sql<{ role: string; hash: string }[]>`
      select role, password_hash as hash from users where id = ${id}`;
    return r;
  };
  const PATCH_400 = [
    MSG.invalidRole,
    MSG.passwordTooShort,
    MSG.passwordTooLong,
    MSG.invalidBody,
  ];
  await fc.assert(
    fc.asyncProperty(
      bodyOf(updateBody),
      contentType,
      fc.constantFrom(String(id), String(id), "999999", "x"),
      async (body, type, segment) => {
        const before = await row();
        const answer = await send(
          svc,
          cookie,
          "PATCH",
          `/api/users/${segment}`,
          body,
          type,
        );
        const after = await row();
        if (answer.status === 200) {
          const account = JSON.parse(answer.text);
          assertEquals(account, {
            id,
            username: target.account.username,
            name: target.account.name,
            email: target.account.email,
            role: after.role,
          });
          const sent = JSON.parse(new TextDecoder().decode(body));
          const changed = typeof sent.password === "string" &&
            sent.password !== "";
          assertEquals(after.hash !== before.hash, changed);
          if (!sent.role) assertEquals(after.role, before.role);
          return;
        }
        assertEquals(after, before, `${answer.status} changed the row`);
        if (answer.status === 400) return assertErrorBody(answer, PATCH_400);
        if (answer.status === 413) {
          return assertErrorBody(answer, [MSG.bodyTooLarge]);
        }
        if (answer.status === 404) {
          return assertErrorBody(answer, [MSG.userNotFound]);
        }
        throw new Error(`unexpected ${answer.status} ${answer.text}`);
      },
    ),
    { numRuns: RUNS },
  );
});

Deno.test("any login body gets 200, 400, 401 or 429, and only a 200 starts a session", async () => {
  await using svc = await startService({ LOGIN_MAX_FAILURES: "1000000" });
  const sessions = async () => (await svc.sql`select 1 from sessions`).length;
  await fc.assert(
    fc.asyncProperty(bodyOf(loginBody), contentType, async (body, type) => {
      const before = await sessions();
      const headers: Record<string, string> = {};
      if (type !== undefined) headers["content-type"] = type;
      const res = await svc.fetch("/api/auth/login", {
        method: "POST",
        headers,
        body,
      });
      const answer = {
        status: res.status,
        type: res.headers.get("content-type"),
        text: await res.text(),
      };
      const started = (await sessions()) - before;
      if (answer.status === 200) {
        assertEquals(started, 1);
        assertEquals(JSON.parse(answer.text).username, "admin");
        return;
      }
      assertEquals(started, 0);
      assertEquals(res.headers.getSetCookie(), []);
      if (answer.status === 400) {
        return assertErrorBody(answer, [MSG.credentialsRequired]);
      }
      if (answer.status === 413) {
        return assertErrorBody(answer, [MSG.bodyTooLarge]);
      }
      if (answer.status === 401) {
        return assertErrorBody(answer, [MSG.invalidCredentials]);
      }
      throw new Error(`unexpected ${answer.status} ${answer.text}`);
    }),
    {
      numRuns: RUNS,
      // U+0000 in a username once made the lookup fail with 500.
      examples: [[
        encode('{"username":"a\\u0000b","password":"x"}'),
        undefined,
      ]],
    },
  );
});

Deno.test("any path segment as an id gets a contract answer, and only a 200 deletes", async () => {
  await using svc = await startService();
  const cookie = await loginCookie(svc);
  const victims = new Set<number>();
  for (let i = 0; i < 3; i++) {
    victims.add((await svc.userClient("viewer")).account.id);
  }
  const segment = fc.oneof(
    fc.constantFrom(...[...victims].map(String)),
    fc.integer({ min: -5, max: 50 }).map(String),
    fc.string({ unit: "grapheme", minLength: 1, maxLength: 30 }).map(
      encodeURIComponent,
    ),
    fc.constantFrom(
      "%00",
      "1e3",
      "0x1",
      "1.0",
      " 1",
      "%2e%2e",
      "9".repeat(500),
    ),
  );
  await fc.assert(
    fc.asyncProperty(
      segment,
      fc.constantFrom("GET", "DELETE"),
      async (seg, method) => {
        const count = (await svc.sql`select 1 from users`).length;
        const answer = await send(
          svc,
          cookie,
          method,
          `/api/users/${seg}`,
          encode(""),
          undefined,
        );
        const after = (await svc.sql`select 1 from users`).length;
        if (answer.status === 200) {
          assertEquals(after, method === "DELETE" ? count - 1 : count);
          return;
        }
        assertEquals(after, count);
        if (answer.status === 400) {
          return assertErrorBody(answer, [MSG.cannotDeleteSelf]);
        }
        if (answer.status === 404) {
          return assertErrorBody(answer, [MSG.userNotFound, MSG.notFound]);
        }
        throw new Error(`unexpected ${answer.status} ${answer.text}`);
      },
    ),
    { numRuns: RUNS },
  );
  assertEquals((await svc.admin.me()).status, 200, "the admin still exists");
});
