/**
 * Who an account is: the characters a username may hold, look-alikes of
 * existing names, and the same rules for the first admin from the
 * environment and for the recovery task.
 */
import { assert, assertEquals, assertMatch } from "./support/assert.ts";
import { createAdmin } from "../src/cli/create-admin.ts";
import { loadConfig, StartupError } from "../src/config.ts";
import { createLogger } from "../src/log.ts";
import { startService } from "../src/server.ts";
import { NewAccountSchema } from "../src/users/account-rules.ts";
import { runTask } from "./support/process.ts";
import { sharedService, testDatabase } from "./support/service.ts";

// bcrypt's work is not this file's subject: its cheapest cost.
const service = sharedService({}, { bcryptCost: 4 });

const NOT_ALLOWED = {
  error: "Username contains characters that are not allowed",
};
const DUPLICATE = { error: "Username or email already exists" };
const TOO_LONG = {
  error: "Username must be at most 64 characters without control characters",
};

let n = 0;
const body = (username: string, email = `id${++n}@example.com`) => ({
  username,
  name: "Someone",
  email,
  password: "identity-password",
  role: "viewer" as const,
});

Deno.test("names in one script, accents and apostrophes included, are accepted", async () => {
  const svc = await service();
  const names = [
    "José",
    "Ólafur",
    "山田太郎",
    "müller",
    "O'Brien",
    "arnold",
    "Ελένη",
    "Иван",
    "たなか太郎",
    "Tanaka田中",
    "김철수kim",
    "jean-luc.picard_2",
  ];
  for (const username of names) {
    const res = await svc.admin.POST("/api/users", { body: body(username) });
    assertEquals(res.response.status, 201, `${username}: ${res.error?.error}`);
    assertEquals(res.data!.username, username);
  }
});

Deno.test("look-alikes of root and admin are refused or collide with them", async () => {
  const svc = await service();
  const root = await svc.admin.POST("/api/users", { body: body("root") });
  assertEquals(root.response.status, 201);
  const cases: [string, unknown][] = [
    ["ＲＯＯＴ", DUPLICATE], // fullwidth
    ["𝐫𝐨𝐨𝐭", DUPLICATE], // mathematical bold
    ["𝚛𝚘𝚘𝚝", DUPLICATE], // mathematical monospace
    ["ROOT", DUPLICATE],
    ["admİn", DUPLICATE],
    ["\u0430dmin", NOT_ALLOWED], // Cyrillic а
    ["r\u043eot", NOT_ALLOWED], // Cyrillic о
    ["\u03b1dmin", NOT_ALLOWED], // Greek α
    ["ro\u200bot", NOT_ALLOWED], // zero-width space
    ["ro\u200dot", NOT_ALLOWED], // zero-width joiner
    ["ro\u00adot", NOT_ALLOWED], // soft hyphen
    ["\u202etoor", NOT_ALLOWED], // right-to-left override
    ["ro\u2028ot", NOT_ALLOWED], // line separator
    ["ro\ue000ot", NOT_ALLOWED], // private use
    ["ro\u{e0061}ot", NOT_ALLOWED], // tag character (format)
    ["ro\u0378ot", NOT_ALLOWED], // unassigned
  ];
  for (const [username, expected] of cases) {
    const res = await svc.admin.POST("/api/users", { body: body(username) });
    assertEquals(
      [res.response.status, res.error],
      [expected === DUPLICATE ? 409 : 400, expected],
      JSON.stringify(username),
    );
  }
  // E-mails: fullwidth collides; invisible characters are no address.
  const mail = await svc.admin.POST("/api/users", {
    body: body("mailer", "boss@corp.example"),
  });
  assertEquals(mail.response.status, 201);
  const twin = await svc.admin.POST("/api/users", {
    body: body("mailer2", "ＢＯＳＳ@corp.example"),
  });
  assertEquals([twin.response.status, twin.error], [409, DUPLICATE]);
  const hidden = await svc.admin.POST("/api/users", {
    body: body("mailer3", "bo\u200bss@corp.example"),
  });
  assertEquals([hidden.response.status, hidden.error], [400, {
    error: "Email must be a valid address",
  }]);
  const [{ n: count }] = await svc.sql<{ n: number }[]>`
    select count(*)::int as n from users`;
  assertEquals(count, 3, "only admin, root and mailer exist");
});

Deno.test("the character rule comes after the length rule and before the name's", async () => {
  const svc = await service();
  const post = async (fields: Partial<ReturnType<typeof body>>) => {
    const res = await svc.admin.POST("/api/users", {
      body: { ...body("ok"), ...fields },
    });
    return [res.response.status, res.error] as [number, unknown];
  };
  assertEquals(await post({ username: "\u200b".repeat(65) }), [400, TOO_LONG]);
  assertEquals(await post({ username: "a\u0007\u200b" }), [400, TOO_LONG]);
  assertEquals(await post({ username: "a\u200b", name: "n".repeat(201) }), [
    400,
    NOT_ALLOWED,
  ]);
  assertEquals(await post({ username: "a\u200b", password: "short" }), [400, {
    error: "Password must be at least 8 characters",
  }]);
});

Deno.test("look-alikes under UTS #39 and full case folding answer 409: Cyrillic scope, dotless i, STRASSE, final sigma, m for rn, e-mails alike", async () => {
  const svc = await service();
  // [stored first, then refused as the same name]
  const pairs: [string, string][] = [
    ["scope", "\u0455\u0441\u043e\u0440\u0435"], // all-Cyrillic ѕсоре
    ["\u0455\u0441\u043e\u0440\u0435", "scope"],
    ["alice", "al\u0131ce"], // dotless ı
    ["al\u0131ce", "alice"],
    ["stra\u00dfe", "STRASSE"], // straße
    ["strasse", "STRA\u1e9eE"], // capital sharp s
    ["\u03c3\u03bf\u03c6\u03bf\u03c2", "\u03c3\u03bf\u03c6\u03bf\u03c3"], // σοφος, σοφοσ
    ["arnold", "amold"], // confusables.txt: m looks like rn
    ["AIice", "alice"], // capital I looks like l
  ];
  for (const [first, second] of pairs) {
    const stored = await svc.admin.POST("/api/users", { body: body(first) });
    assertEquals(stored.response.status, 201, JSON.stringify(first));
    const twin = await svc.admin.POST("/api/users", { body: body(second) });
    assertEquals(
      [twin.response.status, twin.error],
      [409, DUPLICATE],
      `${JSON.stringify(second)} beside ${JSON.stringify(first)}`,
    );
    await svc.sql`delete from users where id = ${stored.data!.id}`;
  }
  const mail = await svc.admin.POST("/api/users", {
    body: body("mailer", "alice@corp.example"),
  });
  assertEquals(mail.response.status, 201);
  for (const email of ["al\u0131ce@corp.example", "ALICE@CORP.EXAMPLE"]) {
    const twin = await svc.admin.POST("/api/users", {
      body: body(`m${++n}`, email),
    });
    assertEquals([twin.response.status, twin.error], [409, DUPLICATE], email);
  }
  const [{ count }] = await svc.sql<{ count: number }[]>`
    select count(*)::int as count from users`;
  assertEquals(count, 2, "only admin and mailer exist");
});

Deno.test("login and the exact lookup take the case-folded name: STRASSE logs in as stra\u00dfe, \u03c3\u03bf\u03c6\u03bf\u03c3 as \u03c3\u03bf\u03c6\u03bf\u03c2", async () => {
  const svc = await service();
  for (
    const [stored, typed] of [
      ["stra\u00dfe", "STRASSE"],
      ["\u03c3\u03bf\u03c6\u03bf\u03c2", "\u03a3\u03bf\u03c6\u03bf\u03c3"],
    ]
  ) {
    const created = await svc.admin.POST("/api/users", { body: body(stored) });
    assertEquals(created.response.status, 201, stored);
    const login = await svc.client().login(typed, "identity-password");
    assert(login.ok, `${typed}: ${login.ok ? "" : login.error}`);
    assertEquals(login.data.username, stored);
    const found = await svc.admin.GET("/api/users", {
      params: { query: { username: typed } },
    });
    assertEquals(found.data?.map((u) => u.username), [stored], typed);
  }
});

Deno.test("a name may not hold control characters, line or paragraph separators: 400, after the name's length, before the e-mail", async () => {
  const svc = await service();
  const NAME_CHARACTERS = {
    error: "Name contains characters that are not allowed",
  };
  const post = async (fields: Partial<ReturnType<typeof body>>) => {
    const res = await svc.admin.POST("/api/users", {
      body: { ...body("named"), ...fields },
    });
    return [res.response.status, res.error] as [number, unknown];
  };
  for (
    const name of [
      "Ann\rLee",
      "Ann\nLee",
      "Ann\r\nLee",
      "Ann\u2028Lee",
      "Ann\u2029Lee",
      "Ann\u0000Lee",
      "Ann\tLee",
      "Ann\u0085Lee",
      "Ann\u007fLee",
    ]
  ) {
    assertEquals(
      await post({ name }),
      [400, NAME_CHARACTERS],
      JSON.stringify(name),
    );
  }
  // The order: the username's rules and the name's length come first, the e-mail after.
  assertEquals(await post({ name: "\n".repeat(2) + "n".repeat(201) }), [400, {
    error: "Name must be at most 200 characters",
  }]);
  assertEquals(await post({ name: "a\nb", username: "ro\u200bot" }), [
    400,
    NOT_ALLOWED,
  ]);
  assertEquals(await post({ name: "a\nb", email: "no-address" }), [
    400,
    NAME_CHARACTERS,
  ]);
  // Accents, apostrophes, other scripts and emoji are names.
  for (
    const name of [
      "Zo\u00eb O'Hara-\u5c71\u7530",
      "\u0395\u03bb\u03ad\u03bd\u03b7 \ud83c\udf3b",
    ]
  ) {
    const res = await svc.admin.POST("/api/users", {
      body: { ...body(`n${++n}`), name },
    });
    assertEquals(res.response.status, 201, name);
    assertEquals(res.data!.name, name);
  }
  const [{ count }] = await svc.sql<{ count: number }[]>`
    select count(*)::int as count from users where name ~ '[[:cntrl:]]'
      or strpos(name, ${"\u2028"}) > 0 or strpos(name, ${"\u2029"}) > 0`;
  assertEquals(count, 0);
});

Deno.test("a value's rules stop at its first broken one: an over-long username is refused by its length alone", async () => {
  // Latin beside Cyrillic: the character rule would refuse it too, were it run.
  const mixed = "a\u0436".repeat(40);
  const parsed = NewAccountSchema.safeParse({
    username: mixed,
    name: "Someone",
    email: "someone@example.com",
    password: "identity-password",
  });
  assertEquals(parsed.error?.issues.map((i) => [i.path, i.message]), [
    [["username"], TOO_LONG.error],
  ]);
  const svc = await service();
  const han = Array.from(
    { length: 20_000 },
    (_, i) => String.fromCodePoint(0x4e00 + i),
  ).join("");
  for (const username of [mixed, han]) {
    const res = await svc.admin.POST("/api/users", { body: body(username) });
    assertEquals([res.response.status, res.error], [400, TOO_LONG]);
  }
});

/** main.ts as an operator starts it; killed if it is still running after 30 s. */
async function start(env: Record<string, string>) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "main.ts"],
    cwd: new URL("../", import.meta.url),
    env: { HOST: "127.0.0.1", PORT: "0", LOG_LEVEL: "warn", ...env },
    stdin: "null",
    signal: AbortSignal.timeout(30_000),
  }).output();
  return { code: out.code, stderr: new TextDecoder().decode(out.stderr) };
}

/** The message of the StartupError that refuses a start in this isolate with `env`. */
async function startupRefusal(env: Record<string, string>): Promise<string> {
  const config = loadConfig({ HOST: "127.0.0.1", PORT: "0", ...env });
  const refused = await startService(config, { log: createLogger("silent") })
    .then(async (started) => {
      await started.close();
      return undefined;
    }, (e: unknown) => e);
  assert(refused instanceof StartupError, `started, or ${refused}`);
  return refused.message;
}

Deno.test("first-admin variables that break an account rule stop the service with exit 1, naming the variable and the rule", async () => {
  await using db = await testDatabase();
  const cases: [Record<string, string>, string, string][] = [
    [
      { ADMIN_PASSWORD: "p".repeat(84) },
      "ADMIN_PASSWORD",
      "Password must be at most 72 bytes",
    ],
    [
      { ADMIN_PASSWORD: "short" },
      "ADMIN_PASSWORD",
      "Password must be at least 8 characters",
    ],
    [
      { ADMIN_USERNAME: "ro\u0007ot" },
      "ADMIN_USERNAME",
      "Username must be at most 64 characters without control characters",
    ],
    [
      { ADMIN_USERNAME: "\u0430dmin" },
      "ADMIN_USERNAME",
      "Username contains characters that are not allowed",
    ],
    [
      { ADMIN_EMAIL: "not-an-address" },
      "ADMIN_EMAIL",
      "Email must be a valid address",
    ],
    [
      { ADMIN_NAME: "n".repeat(201) },
      "ADMIN_NAME",
      "Name must be at most 200 characters",
    ],
  ];
  // The first case as the process an operator starts (exit 1, the line on
  // stderr); the others as the same start in this isolate, whose StartupError
  // is that line (main.ts prints it and exits 1).
  for (const [i, [vars, variable, rule]] of cases.entries()) {
    const env = {
      ...db.env,
      ADMIN_USERNAME: "root",
      ADMIN_PASSWORD: "root-password",
      ...vars,
    };
    let said: string;
    if (i === 0) {
      const run = await start(env);
      assertEquals(run.code, 1, `${JSON.stringify(vars)}: ${run.stderr}`);
      said = run.stderr;
    } else {
      said = await startupRefusal(env);
    }
    assert(said.includes(`${variable}`), said);
    assert(said.includes(rule), said);
  }
  // Nothing was created.
  const check = await runTask(createAdmin, [
    "--username",
    "root",
    "--password",
    "root-password",
  ], db.env);
  assertMatch(check.stdout, /Created admin "root"/);
});

Deno.test("create-admin checks the account rules, the username's characters included", async () => {
  await using db = await testDatabase();
  const refused = [
    [
      ["--username", "\u0430dmin"],
      "Username contains characters that are not allowed",
    ],
    [
      ["--username", "ro\u200bot"],
      "Username contains characters that are not allowed",
    ],
    [
      ["--username", "root", "--password", "p".repeat(73)],
      "Password must be at most 72 bytes",
    ],
  ] as const;
  for (const [args, rule] of refused) {
    const run = await runTask(createAdmin, [
      "--password",
      "rescue-password",
      ...args,
    ], db.env);
    assertEquals(run.code, 1, `${args.join(" ")}: ${run.stdout}`);
    assertMatch(run.stderr, new RegExp(rule));
  }
});
