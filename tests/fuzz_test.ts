/**
 * Property tests: request bodies drawn from the route schemas' own rules and
 * from far outside them, sent over real HTTP. Whatever comes in, the service
 * answers a status its contract allows, every error body is exactly
 * `{error}`, and nothing is stored unless a 2xx said so.
 *
 * Seeded: the seed is printed, and FUZZ_SEED=<seed> runs the same cases again.
 */
import fc from "fast-check";
import { isIP } from "node:net";
import unhomoglyph from "unhomoglyph";
import { caseFold } from "unicode-case-folding";
import { canonicalKey } from "../src/users/canonical.ts";
import { binaryString } from "./support/arbitraries.ts";
import { assert, assertEquals } from "./support/assert.ts";
import {
  ADMIN,
  type ConfiguredApp,
  loginCookie,
  sharedService,
} from "./support/service.ts";

const RUNS = 120;
const ROLES = ["admin", "viewer"] as const;

const SEED = Number(Deno.env.get("FUZZ_SEED") ?? Date.now() % 2 ** 31);
console.log(`fuzz seed ${SEED} (FUZZ_SEED=${SEED} repeats this run)`);

// Contract answers are the subject, not bcrypt: its cheapest cost.
const service = sharedService({}, { bcryptCost: 4 });

/** The contract's messages, as the spec writes them. */
const MSG = {
  allFieldsRequired: "All fields are required",
  roleMustBeAdminOrViewer: "Role must be admin or viewer",
  invalidRole: "Invalid role",
  passwordTooShort: "Password must be at least 8 characters",
  passwordTooLong: "Password must be at most 72 bytes",
  passwordNul: "Password must not contain NUL characters",
  usernameInvalid:
    "Username must be at most 64 characters without control characters",
  usernameCharacters: "Username contains characters that are not allowed",
  nameTooLong: "Name must be at most 200 characters",
  nameCharacters: "Name contains characters that are not allowed",
  emailInvalid: "Email must be a valid address",
  invalidBody: "Invalid request body",
  duplicateUser: "Username or email already exists",
  userNotFound: "User not found",
  notFound: "Not found",
  cannotDeleteSelf: "You cannot delete your own account",
  bodyTooLarge: "Request body too large",
  createFailed: "Failed to create user",
  credentialsRequired: "Username and password are required",
  invalidCredentials: "Invalid username or password",
  tooManyLoginAttempts: "Too many login attempts",
} as const;

// ---- generators ------------------------------------------------------------

const unicode = fc.string({ unit: "grapheme", maxLength: 40 });
const binaryish = binaryString({ maxLength: 40 });

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
  svc: Pick<ConfiguredApp, "fetch">,
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
  const svc = await service();
  const cookie = await loginCookie(svc);
  const created = new Map<number, Record<string, unknown>>();
  const CREATE_400 = [
    MSG.allFieldsRequired,
    MSG.roleMustBeAdminOrViewer,
    MSG.passwordTooShort,
    MSG.usernameInvalid,
    MSG.usernameCharacters,
    MSG.nameTooLong,
    MSG.nameCharacters,
    MSG.emailInvalid,
    MSG.passwordTooLong,
    MSG.passwordNul,
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
  // PostgreSQL text cannot hold U+0000: each of these gets its 400, never
  // a 500.
  const examples: [Uint8Array<ArrayBuffer>, string | undefined][] = [
    [nul({ name: "a\u0000b" }), undefined],
    [nul({ email: "a\u0000b@example.com" }), undefined],
    [nul({ username: "a\u0000b" }), undefined],
    [nul({ password: "pass\u0000word" }), undefined],
  ];
  // Every FRESH_EVERY-th request is a valid body under a name never used
  // before, so at least RUNS / FRESH_EVERY users are created by design.
  const FRESH_EVERY = 6;
  let run = 0;
  let fresh = 0;
  await fc.assert(
    fc.asyncProperty(bodyOf(createBody), contentType, async (drawn, type) => {
      const body = ++run % FRESH_EVERY === 0
        ? encode(JSON.stringify({
          username: `fresh-${++fresh}`,
          name: "Fresh",
          email: `fresh-${fresh}@example.com`,
          password: "fresh-password",
          role: "viewer",
        }))
        : drawn;
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
    { numRuns: RUNS, examples, seed: SEED },
  );
  assert(
    created.size >= RUNS / FRESH_EVERY,
    `only ${created.size} users were created`,
  );
  const list = await svc.admin.GET("/api/users");
  const others = list.data!.filter((u) => u.id !== svc.adminAccount.id);
  assertEquals(
    others.sort((a, b) => a.id - b.id),
    [...created.values()].sort((a, b) => Number(a.id) - Number(b.id)),
  );
  // No planted hash made it: every stored hash is a whole bcrypt hash of
  // the service's cost.
  const cost = String(svc.config.BCRYPT_COST).padStart(2, "0");
  const whole = new RegExp(`^\\$2[aby]\\$${cost}\\$[./A-Za-z0-9]{53}$`);
  const hashes = await svc.sql<{ h: string }[]>`
    select password_hash as h from users`;
  for (const { h } of hashes) assert(whole.test(h), h);
});

Deno.test("fresh valid bodies are always created, whatever the Content-Type says", async () => {
  const svc = await service();
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
    { numRuns: 40, seed: SEED },
  );
});

Deno.test("any body PATCHed to a user gets a contract answer, and only a 200 changes the row", async () => {
  const svc = await service();
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
    MSG.passwordNul,
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
    { numRuns: RUNS, seed: SEED },
  );
});

Deno.test("any login body gets 200, 400, 401 or 429, and only a 200 starts a session", async () => {
  const { sql } = await service();
  // Throttling is not what this property is about.
  const svc = (await service()).configured({ LOGIN_MAX_FAILURES: "1000000" });
  const sessions = async () => (await sql`select 1 from sessions`).length;
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
      seed: SEED,
      // PostgreSQL text cannot hold U+0000: a username holding it gets a
      // 401, never a 500 from the lookup.
      examples: [[
        encode('{"username":"a\\u0000b","password":"x"}'),
        undefined,
      ]],
    },
  );
});

Deno.test("any path segment as an id gets a contract answer, and only a 200 deletes", async () => {
  const svc = await service();
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
    { numRuns: RUNS, seed: SEED },
  );
  assertEquals((await svc.admin.me()).status, 200, "the admin still exists");
});

// ---- Unicode identifiers -----------------------------------------------------

/**
 * The canonical key as docs/security.md ("Identities") defines it (NFKC_Casefold, U+0307 after
 * i or j dropped), and the UTS #39 skeleton (NFD, confusables.txt, NFD)
 * taken regardless of case, written out here rather than taken from the
 * service.
 */
const canonical = (s: string) => {
  let key = s.normalize("NFKC");
  for (let round = 0; round < 4; round++) {
    const next = caseFold(key).replace(/\p{DI}/gu, "")
      .replace(/([ij])\u0307/g, "$1").normalize("NFKC");
    if (next === key) break;
    key = next;
  }
  return key;
};
const skeleton = (s: string) =>
  unhomoglyph(s.normalize("NFD")).normalize("NFD");
const lookalike = (s: string) => skeleton(canonical(skeleton(s)));

const shift = (s: string, from: number, to: number) =>
  [...s].map((c) => {
    const cp = c.codePointAt(0)!;
    return cp >= from && cp < from + 26
      ? String.fromCodePoint(cp - from + to)
      : c;
  }).join("");

/** Look-alike spellings of a Latin name. */
const disguises: fc.Arbitrary<(s: string) => string>[] = [
  fc.constant((s) => s.toUpperCase()),
  fc.constant((s) => shift(s, 0x61, 0xff41)), // fullwidth
  fc.constant((s) => shift(s, 0x61, 0x1d41a)), // mathematical bold
  fc.constant((s) => shift(s, 0x61, 0x1d68a)), // mathematical monospace
  fc.constant((s) => s.replaceAll("i", "İ")),
  fc.constant((s) => s.replaceAll("i", "\u0131")), // dotless i
  fc.constant((s) => s.replaceAll("ss", "\u00df").replaceAll("s", "\u017f")),
  // Every letter that has a Cyrillic look-alike swapped: one script, not mixed.
  fc.constant((s) =>
    [...s].map((c) =>
      ({ a: "а", c: "с", e: "е", o: "о", p: "р", x: "х", y: "у" })[c] ?? c
    )
      .join("")
  ),
  fc.constant((s) => s.replaceAll("m", "rn")),
  // One letter swapped for its Cyrillic or Greek look-alike.
  fc.constantFrom(
    ["a", "а"],
    ["e", "е"],
    ["o", "о"],
    ["p", "р"],
    ["c", "с"],
    ["x", "х"],
    ["o", "ο"],
    ["a", "α"],
    ["i", "ι"],
  ).map(([latin, other]) => (s: string) => s.replace(latin, other)),
  fc.tuple(
    fc.constantFrom(
      "\u200b", // zero-width space
      "\u200c",
      "\u200d",
      "\u2060", // word joiner
      "\ufeff",
      "\u00ad", // soft hyphen
      "\u202e", // right-to-left override
      "\u2066",
      "\u{e0041}", // tag
    ),
    fc.nat(),
  ).map(([mark, at]) => (s: string) => {
    const chars = [...s];
    chars.splice(at % (chars.length + 1), 0, mark);
    return chars.join("");
  }),
  fc.constantFrom("山田", "たなか", "김", "Ж", "é", "ß").map(
    (extra) => (s: string) => s + extra,
  ),
];

/** What the service refuses in a username (docs/security.md, "Identities"): invisible characters, or Latin beside Cyrillic or Greek. */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cn}]/u;
const disallowed = (name: string) =>
  INVISIBLE.test(name) ||
  (/\p{sc=Latn}/u.test(name) && /[\p{sc=Cyrl}\p{sc=Grek}]/u.test(name));

const identifier = fc.tuple(
  fc.oneof(
    fc.constantFrom(
      "root",
      "admin",
      "alice",
      "ivan",
      "kiki",
      "oscar",
      "pia",
      "scope",
      "strasse",
      "emma",
    ),
    fc.stringMatching(/^[a-z]{3,8}$/),
  ),
  fc.array(fc.oneof(...disguises), { maxLength: 3 }),
).map(([base, changes]) => changes.reduce((s, f) => f(s), base));

Deno.test("the canonical key is idempotent, and lower case does not change it", () => {
  fc.assert(
    fc.property(
      fc.oneof(
        fc.string({ unit: "binary", maxLength: 40 }),
        fc.string({ unit: "grapheme", maxLength: 40 }),
        identifier,
      ),
      (s) => {
        const key = canonicalKey(s);
        assertEquals(canonicalKey(key), key, JSON.stringify(s));
        assertEquals(canonicalKey(s.toLowerCase()), key, JSON.stringify(s));
      },
    ),
    { numRuns: 2000, seed: SEED },
  );
});

Deno.test("Unicode usernames and e-mails: never a 5xx, and no two accounts share a canonical key or a look-alike skeleton", async () => {
  const { sql } = await service();
  // Throttling is not what this property is about.
  const svc = (await service()).configured({ LOGIN_MAX_FAILURES: "1000000" });
  const cookie = await loginCookie(svc);
  const CREATE_400 = [
    MSG.usernameInvalid,
    MSG.usernameCharacters,
    MSG.emailInvalid,
  ];
  let created = 0;
  await fc.assert(
    fc.asyncProperty(identifier, identifier, async (username, local) => {
      const answer = await send(
        svc,
        cookie,
        "POST",
        "/api/users",
        encode(JSON.stringify({
          username,
          name: username,
          email: `${local}@example.com`,
          password: "unicode-password",
          role: "viewer",
        })),
        "application/json",
      );
      assert(answer.status < 500, `${answer.status} ${answer.text}`);
      // Surrounding whitespace (U+FEFF included, for JavaScript's trim) is dropped first.
      if (disallowed(username.trim())) {
        assertEquals([answer.status, JSON.parse(answer.text)], [400, {
          error: MSG.usernameCharacters,
        }], JSON.stringify(username));
      } else if (INVISIBLE.test(`${local}@example.com`.trim())) {
        assertEquals(answer.status, 400, JSON.stringify(local));
      }
      if (answer.status === 201) created++;
      else if (answer.status === 409) {
        assertErrorBody(answer, [MSG.duplicateUser]);
      } else {
        assertEquals(answer.status, 400, answer.text);
        assertErrorBody(answer, CREATE_400);
      }
      // Logging in under the name is never a 5xx either.
      const login = await svc.fetch("/api/auth/login", {
        method: "POST",
        body: JSON.stringify({ username, password: "not-the-password" }),
      });
      assertEquals(login.status, 401, await login.text());
    }),
    { numRuns: RUNS, seed: SEED },
  );
  assert(created > 0, "no identifier was ever accepted");
  const rows = await sql<{ id: number; username: string; email: string }[]>`
    select id, username, email from users`;
  for (
    const [field, keyOf] of [
      ["username", canonical],
      ["email", canonical],
      ["username", lookalike],
      ["email", lookalike],
    ] as const
  ) {
    const seen = new Map<string, number>();
    for (const row of rows) {
      const key = keyOf(row[field]);
      const other = seen.get(key);
      assert(
        other === undefined,
        `${field}s of ${other} and ${row.id} share the key ${key}`,
      );
      seen.set(key, row.id);
    }
  }
});

// ---- values the service parses: forwarded addresses, cursors, times -------

/** A header value Headers accepts: Latin-1, no NUL, CR or LF. */
const headerText = (maxLength: number) =>
  fc.string({
    unit: fc.oneof(
      fc.integer({ min: 0x20, max: 0x7e }),
      fc.integer({ min: 0x80, max: 0xff }),
      fc.constant(0x09),
    ).map((n) => String.fromCharCode(n)),
    maxLength,
  });

const hex16 = fc.oneof(
  { arbitrary: fc.constant(0), weight: 3 },
  { arbitrary: fc.integer({ min: 0, max: 0xffff }), weight: 2 },
);
const octet = fc.integer({ min: 0, max: 255 });

/** IPv4 in dotted decimal, sometimes with a leading zero (not an address). */
const ipv4Text = fc.tuple(octet, octet, octet, octet, fc.boolean()).map((
  [a, b, c, d, padded],
) => [a, b, c, padded && d < 100 ? `0${d}` : d].join("."));

/** IPv6 in its many spellings: case, leading zeros, a `::`, an IPv4 tail. */
const ipv6Text = fc.tuple(
  fc.array(hex16, { minLength: 8, maxLength: 8 }),
  fc.boolean(),
  fc.boolean(),
  fc.nat(8),
  fc.nat(8),
  fc.constantFrom("none", "tail", "mapped"),
  octet,
  octet,
).map(([groups, upper, pad, from, span, kind, x, y]) => {
  if (kind === "mapped") groups = [0, 0, 0, 0, 0, 0xffff, ...groups.slice(6)];
  const texts = groups.map((g) => {
    const t = g.toString(16);
    return (pad ? t.padStart(4, "0") : t)
      [upper ? "toUpperCase" : "toLowerCase"]();
  });
  if (kind !== "none") texts.splice(6, 2, `${groups[6] >> 8}.${x}.${y}.1`);
  const start = Math.min(from, texts.length);
  const end = Math.min(start + span, texts.length);
  if (end - start < 1) return texts.join(":");
  return `${texts.slice(0, start).join(":")}::${texts.slice(end).join(":")}`;
});

const forwardedFor = fc.oneof(
  ipv4Text,
  ipv6Text,
  fc.tuple(fc.oneof(ipv4Text, ipv6Text), headerText(40)).map(([ip, rest]) =>
    `${ip}${rest}`
  ),
  fc.tuple(headerText(40), fc.oneof(ipv4Text, ipv6Text)).map(([junk, ip]) =>
    `${junk},${ip}`
  ),
  headerText(60),
  fc.constantFrom(
    "9".repeat(64_000),
    "unknown",
    "[::1]",
    "1.2.3.4:80",
    "fe80::1%eth0",
    "::ffff:1.2.3.4.5",
    "1::2::3",
  ),
);

/**
 * The address a forwarded first hop names, written out independently of
 * the service: node:net decides whether it is one, the WHATWG URL parser
 * writes IPv6 in RFC 5952's form, IPv4-mapped becomes its IPv4 address.
 */
function expectedAddress(hop: string): string | undefined {
  const kind = isIP(hop);
  if (kind === 0 || hop.includes("%")) return undefined;
  if (kind === 4) return hop;
  const host = new URL(`http://[${hop}]/`).hostname.slice(1, -1);
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(host);
  if (!mapped) return host;
  const [hi, lo] = [parseInt(mapped[1], 16), parseInt(mapped[2], 16)];
  return [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff].join(".");
}

Deno.test("any X-Forwarded-For from a trusted proxy: never a 5xx, and the log holds its first hop as an address or the peer's", async () => {
  const svc = await service();
  const proxied = svc.configured({ TRUST_PROXY: "true" });
  await fc.assert(
    fc.asyncProperty(forwardedFor, async (forwarded) => {
      const res = await proxied.fetch("/api/auth/me", {
        headers: { "x-forwarded-for": forwarded },
      });
      await res.body?.cancel();
      assertEquals(res.status, 401);
      const id = res.headers.get("x-request-id");
      const line = svc.logs.find((l) =>
        l.msg === "request" && l.requestId === id
      );
      // Headers drop the value's surrounding whitespace, as the wire does.
      const sent = forwarded.replace(/^[ \t]+|[ \t]+$/g, "");
      const hop = sent.split(",")[0].replace(/^[ \t]+|[ \t]+$/g, "");
      assertEquals(
        line?.ip,
        expectedAddress(hop) ?? "127.0.0.1",
        JSON.stringify(forwarded.slice(0, 80)),
      );
    }),
    { numRuns: RUNS * 2, seed: SEED },
  );
});

/** base64url, as the service writes its cursors. */
const base64url = (text: string) =>
  btoa(text).replaceAll("+", "-").replaceAll("/", "_").replaceAll("=", "");

const cursorText = fc.oneof(
  fc.tuple(
    fc.bigInt({ min: -(10n ** 18n) + 1n, max: 10n ** 18n - 1n }),
    fc.oneof(fc.integer({ min: 0, max: 2 ** 31 }), fc.nat()),
  ).map(([at, id]) => `${at}.${id}`),
  fc.tuple(
    fc.bigInt({ min: -(10n ** 19n), max: 10n ** 19n }),
    fc.bigInt({ min: -(10n ** 11n), max: 10n ** 11n }),
  ).map(([at, id]) => `${at}.${id}`),
  fc.string({ unit: "grapheme-ascii", maxLength: 30 }),
);

Deno.test("any after cursor: 200, or 400 Invalid query parameter: after, never a 5xx", async () => {
  const svc = await service();
  await svc.userClient("viewer");
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(
        cursorText.map(base64url),
        headerText(40).map(encodeURIComponent),
      ),
      fc.constantFrom("", "&limit=1", "&limit=1000"),
      async (cursor, limit) => {
        const res = await svc.adminFetch(`/api/users?after=${cursor}${limit}`);
        const text = await res.text();
        if (res.status === 200) return assert(Array.isArray(JSON.parse(text)));
        assertEquals([res.status, JSON.parse(text)], [400, {
          error: "Invalid query parameter: after",
        }], `${cursor} ${text}`);
      },
    ),
    { numRuns: RUNS, seed: SEED },
  );
});

const pad = (n: number, width: number) => String(n).padStart(width, "0");

/** ISO 8601 times of any year ISO writes with four digits, any offset, and near misses. */
const isoText = fc.oneof(
  fc.tuple(
    fc.integer({ min: 0, max: 9999 }),
    fc.integer({ min: 0, max: 13 }),
    fc.integer({ min: 0, max: 32 }),
    fc.integer({ min: 0, max: 24 }),
    fc.integer({ min: 0, max: 60 }),
    fc.option(fc.integer({ min: 0, max: 999_999 }), { nil: undefined }),
    fc.oneof(
      fc.constant("Z"),
      fc.constant(""),
      fc.tuple(
        fc.constantFrom("+", "-"),
        fc.integer({ min: 0, max: 24 }),
        fc.integer({ min: 0, max: 60 }),
      ).map(([sign, h, m]) => `${sign}${pad(h, 2)}:${pad(m, 2)}`),
    ),
    fc.boolean(),
  ).map(([y, mo, d, h, mi, frac, zone, dateOnly]) => {
    const date = `${pad(y, 4)}-${pad(mo, 2)}-${pad(d, 2)}`;
    if (dateOnly) return date;
    const fraction = frac === undefined ? "" : `.${frac}`;
    return `${date}T${pad(h, 2)}:${pad(mi, 2)}:${pad(mi, 2)}${fraction}${zone}`;
  }),
  fc.constantFrom(
    "0000-01-01",
    "0001-01-01",
    "9999-12-31T23:59:59-23:59",
    "0001-01-01T00:00:00+23:59",
    "9999-12-31T23:59:59.999999Z",
  ),
  headerText(30),
);

Deno.test("any since or until: 200, or 400 Invalid query parameter naming it, never a 5xx", async () => {
  const svc = await service();
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom("since", "until"),
      isoText,
      async (name, value) => {
        const res = await svc.adminFetch(
          `/api/audit?${name}=${encodeURIComponent(value)}`,
        );
        const text = await res.text();
        if (res.status === 200) return assert(Array.isArray(JSON.parse(text)));
        assertEquals([res.status, JSON.parse(text)], [400, {
          error: `Invalid query parameter: ${name}`,
        }], `${name}=${value}`);
      },
    ),
    { numRuns: RUNS * 2, seed: SEED },
  );
});
