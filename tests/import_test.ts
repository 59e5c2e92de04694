/**
 * Imports: users with passwords hashed by other systems' libraries come in
 * through `POST /api/imports`, log in with their old passwords, and have
 * their hashes replaced by bcrypt at the first login.
 */
import { Buffer } from "node:buffer";
import { createCipheriv, pbkdf2Sync, scryptSync } from "node:crypto";
import bcryptjs from "bcryptjs";
import { argon2i, argon2id } from "hash-wasm";
import { importUsers } from "../src/cli/import.ts";
import { assert, assertEquals, assertMatch } from "./support/assert.ts";
import {
  finished,
  importErrors,
  ndjson,
  person,
  postImport,
} from "./support/imports.ts";
import { userWithTotp } from "./mfa_support.ts";
import { ADMIN, newUser, sharedService } from "./support/service.ts";

const service = sharedService();

Deno.test("a body of NDJSON is stored, queued and answered 202 with its Location", async () => {
  const svc = await service();
  const res = await postImport(
    svc,
    ndjson([person("plain1", { password: "plain-password-1" })]),
  );
  assertEquals(res.status, 202);
  assertEquals(res.body.status, "queued");
  assertEquals(res.location, `/api/imports/${res.body.id}`);
  const done = await finished(svc, res.body.id);
  assertEquals(done.status, "finished");
  assertEquals(done.total, 1);
  assertEquals(done.created, 1);
  const login = await svc.client().login("plain1", "plain-password-1");
  assert(login.ok, "the imported user logs in");
});

/** passlib's base64: `.` for `+`, no padding. */
const ab64 = (b: Uint8Array) =>
  Buffer.from(b).toString("base64").replaceAll("+", ".").replace(/=+$/, "");
const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64");
const unpadded = (b: Uint8Array) => b64(b).replace(/=+$/, "");

/** Firebase's published scrypt test vector (github.com/firebase/scrypt). */
const FIREBASE = {
  signerKey:
    "jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA==",
  saltSeparator: "Bw==",
  rounds: 8,
  memCost: 14,
  password: "user1password",
  salt: "42xEC+ixf3L2lw==",
  hash:
    "lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ==",
};

/** Users whose hashes other libraries made, each from its known password. */
async function foreignHashes() {
  const salt = crypto.getRandomValues(new Uint8Array(16));
  const bcrypt = bcryptjs.hashSync("bcrypt-password", 10);
  const hashes: {
    username: string;
    password: string;
    hash: string;
    from: string;
  }[] = [
    {
      username: "bcrypt2b",
      password: "bcrypt-password",
      hash: bcrypt,
      from: "bcrypt",
    },
    {
      username: "bcrypt2a",
      password: "bcrypt-password",
      hash: bcrypt.replace(/^\$2b\$/, "$2a$"),
      from: "bcrypt",
    },
    {
      username: "bcrypt2y",
      password: "bcrypt-password",
      hash: bcrypt.replace(/^\$2b\$/, "$2y$"),
      from: "bcrypt",
    },
    {
      username: "argonid",
      password: "argon2id-password",
      hash: await argon2id({
        password: "argon2id-password",
        salt,
        parallelism: 1,
        iterations: 2,
        memorySize: 19_456,
        hashLength: 32,
        outputType: "encoded",
      }),
      from: "argon2id",
    },
    {
      username: "argoni",
      password: "argon2i-password",
      hash: await argon2i({
        password: "argon2i-password",
        salt,
        parallelism: 1,
        iterations: 3,
        memorySize: 4096,
        hashLength: 32,
        outputType: "encoded",
      }),
      from: "argon2i",
    },
    {
      username: "scryptphc",
      password: "scrypt-password",
      hash: `$scrypt$ln=14,r=8,p=1$${ab64(salt)}$${
        ab64(
          scryptSync("scrypt-password", salt, 32, { N: 2 ** 14, r: 8, p: 1 }),
        )
      }`,
      from: "scrypt",
    },
    {
      username: "pbkdf2phc",
      password: "pbkdf2-password",
      hash: `$pbkdf2-sha256$i=100000,l=32$${unpadded(salt)}$${
        unpadded(pbkdf2Sync("pbkdf2-password", salt, 100_000, 32, "sha256"))
      }`,
      from: "pbkdf2-sha256",
    },
    {
      username: "passlib",
      password: "passlib-password",
      hash: `$pbkdf2-sha256$29000$${ab64(salt)}$${
        ab64(pbkdf2Sync("passlib-password", salt, 29_000, 32, "sha256"))
      }`,
      from: "pbkdf2-sha256",
    },
    {
      username: "django",
      password: "django-password",
      hash: `pbkdf2_sha256$260000$Zm9vYmFyc2FsdA$${
        b64(
          pbkdf2Sync(
            "django-password",
            "Zm9vYmFyc2FsdA",
            260_000,
            32,
            "sha256",
          ),
        )
      }`,
      from: "pbkdf2-sha256",
    },
    {
      username: "firebase",
      password: FIREBASE.password,
      hash:
        `$fbscrypt$v=1,n=${FIREBASE.memCost},r=${FIREBASE.rounds},p=1,ss=${FIREBASE.saltSeparator},sk=${FIREBASE.signerKey}$${FIREBASE.salt}$${FIREBASE.hash}`,
      from: "firebase-scrypt",
    },
  ];
  return hashes;
}

Deno.test("Firebase's published scrypt test vector is what our check computes", () => {
  const key = scryptSync(
    FIREBASE.password,
    Buffer.concat([
      Buffer.from(FIREBASE.salt, "base64"),
      Buffer.from(FIREBASE.saltSeparator, "base64"),
    ]),
    32,
    { N: 2 ** FIREBASE.memCost, r: FIREBASE.rounds, p: 1 },
  );
  const cipher = createCipheriv("aes-256-ctr", key, new Uint8Array(16));
  const signed = Buffer.concat([
    cipher.update(Buffer.from(FIREBASE.signerKey, "base64")),
    cipher.final(),
  ]);
  assertEquals(signed.toString("base64"), FIREBASE.hash);
});

Deno.test("users with hashes from other libraries log in with their passwords, and their first login rehashes them to bcrypt", async () => {
  const svc = await service();
  const users = await foreignHashes();
  const res = await postImport(
    svc,
    ndjson(users.map((u) => person(u.username, { passwordHash: u.hash }))),
  );
  assertEquals(res.status, 202);
  const done = await finished(svc, res.body.id);
  assertEquals(await importErrors(svc, res.body.id), []);
  assertEquals(done.created, users.length);
  for (const u of users) {
    const wrong = await svc.client().login(u.username, u.password + "x");
    assert(!wrong.ok, `${u.username}: a wrong password is refused`);
    const login = await svc.client().login(u.username, u.password);
    assert(
      login.ok,
      `${u.username} logs in with the password its hash was made from`,
    );
    const [row] = await svc.sql<{ hash: string }[]>`
      select password_hash as hash from users where username = ${u.username}`;
    if (u.from === "bcrypt") {
      assertEquals(row.hash, u.hash, `${u.username}: a bcrypt hash stays`);
    } else {
      assert(/^\$2b\$/.test(row.hash), `${u.username}: rehashed to bcrypt`);
    }
    const again = await svc.client().login(u.username, u.password);
    assert(again.ok, `${u.username} logs in again after the upgrade`);
  }
  await svc.store.audit.seal();
  const upgraded = await svc.sql<{ username: string; from: string }[]>`
    select target_username as username, details->>'from' as from
    from audit_events where action = 'password.upgraded' order by id`;
  assertEquals(
    [...upgraded],
    users.filter((u) => u.from !== "bcrypt").map((u) => ({
      username: u.username,
      from: u.from,
    })),
  );
});

Deno.test("hashes of unknown formats or over the work ceiling are refused as `Unsupported password hash`", async () => {
  const svc = await service();
  const salt = unpadded(new Uint8Array(16));
  const digest = unpadded(new Uint8Array(32));
  const refused = [
    "$2b$15$" + "a".repeat(53),
    `$argon2id$v=19$m=1048576,t=3,p=4$${salt}$${digest}`,
    `$argon2id$v=19$m=65536,t=64,p=4$${salt}$${digest}`,
    `$scrypt$ln=22,r=8,p=1$${salt}$${digest}`,
    `$pbkdf2-sha256$i=10000000,l=32$${salt}$${digest}`,
    `pbkdf2_sha256$50000000$salt$${digest}`,
    `$fbscrypt$v=1,n=20,r=8,p=1,ss=Bw==,sk=${FIREBASE.signerKey}$${FIREBASE.salt}$${FIREBASE.hash}`,
    "5f4dcc3b5aa765d61d8327deb882cf99",
    "$1$saltsalt$2vqbhTFU1j5NZv7yRLHHc/",
  ];
  const res = await postImport(
    svc,
    ndjson(
      refused.map((hash, i) => person(`heavy${i}`, { passwordHash: hash })),
    ),
  );
  const done = await finished(svc, res.body.id);
  assertEquals(done.created, 0);
  assertEquals(
    await importErrors(svc, res.body.id),
    refused.map((_, i) => ({
      line: i + 1,
      error: "Unsupported password hash",
    })),
  );
});

Deno.test("PBKDF2 counts its iterations once per 32-byte block of key, and scrypt takes what scrypt itself takes within 129 MiB: the rest is `Unsupported password hash`", async () => {
  const svc = await service();
  const salt = new Uint8Array(16);
  const key = (length: number) => new Uint8Array(length).fill(7);
  const hashes: [string, "taken" | "refused"][] = [
    [
      `$pbkdf2-sha256$i=2000000,l=128$${unpadded(salt)}$${unpadded(key(128))}`,
      "refused",
    ],
    [`$pbkdf2-sha256$700000$${ab64(salt)}$${ab64(key(96))}`, "refused"],
    [`pbkdf2_sha256$1000001$salt$${b64(key(64))}`, "refused"],
    [`pbkdf2_sha256$1000000$salt$${b64(key(64))}`, "taken"],
    [
      `$pbkdf2-sha256$i=500000,l=128$${unpadded(salt)}$${unpadded(key(128))}`,
      "taken",
    ],
    // N of 2^(16·r): scrypt refuses it.
    [`$scrypt$ln=16,r=1,p=1$${unpadded(salt)}$${unpadded(key(32))}`, "refused"],
    // 320 MiB: 128·r·(N + 2 + p) bytes.
    [
      `$scrypt$ln=1,r=524288,p=1$${unpadded(salt)}$${unpadded(key(32))}`,
      "refused",
    ],
    [
      `$fbscrypt$v=1,n=16,r=1,p=1,ss=Bw==,sk=${FIREBASE.signerKey}$${FIREBASE.salt}$${FIREBASE.hash}`,
      "refused",
    ],
    [`$scrypt$ln=15,r=1,p=1$${unpadded(salt)}$${unpadded(key(32))}`, "taken"],
    [`$scrypt$ln=17,r=8,p=1$${unpadded(salt)}$${unpadded(key(32))}`, "taken"],
  ];
  const res = await postImport(
    svc,
    ndjson(
      hashes.map(([hash], i) => person(`bound${i}`, { passwordHash: hash })),
    ),
  );
  const done = await finished(svc, res.body.id);
  assertEquals(
    await importErrors(svc, res.body.id),
    hashes.flatMap(([, verdict], i) =>
      verdict === "refused"
        ? [{ line: i + 1, error: "Unsupported password hash" }]
        : []
    ),
  );
  assertEquals(done.created, hashes.filter(([, v]) => v === "taken").length);
});

Deno.test("a login against a stored hash past the ceiling, or one its library refuses, answers as a wrong password", async () => {
  const svc = await service();
  const salt = unpadded(new Uint8Array(16));
  // Stored before the ceiling held them: no import takes them now.
  const stored = [
    `$pbkdf2-sha256$i=2000000,l=128$${salt}$${unpadded(new Uint8Array(128))}`,
    `$scrypt$ln=16,r=1,p=1$${salt}$${unpadded(new Uint8Array(32))}`,
  ];
  for (const [i, hash] of stored.entries()) {
    const username = `stale${i}`;
    const created = await svc.admin.POST("/api/users", {
      body: newUser(username, "stale-password"),
    });
    assertEquals(created.response.status, 201);
    await svc.sql`
      update users set password_hash = ${hash} where username = ${username}`;
    const login = await svc.client().login(username, "stale-password");
    assertEquals(
      login.ok ? { status: login.status } : {
        status: login.status,
        error: "error" in login ? login.error : undefined,
      },
      { status: 401, error: "Invalid username or password" },
      hash,
    );
  }
});

Deno.test("a cancelled import stops after its batch under way and keeps the users it created", async () => {
  const svc = await service();
  // Plain passwords: bcrypt-bound, so the job runs long enough to stop.
  const lines = Array.from(
    { length: 400 },
    (_, i) => person(`slow${i}`, { password: `slow-password-${i}` }),
  );
  const res = await postImport(svc, ndjson(lines));
  const id = res.body.id as number;
  for (;;) {
    const { data } = await svc.admin.GET("/api/imports/{id}", {
      params: { path: { id } },
    });
    if (data!.processed > 0) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const cancelled = await svc.admin.POST("/api/imports/{id}/cancel", {
    params: { path: { id } },
  });
  assertEquals(cancelled.data?.status, "cancelled");
  const created = cancelled.data!.created;
  assert(created > 0 && created < 400, `mid-way: ${created} created`);
  await new Promise((r) => setTimeout(r, 1500));
  const [{ n }] = await svc.sql<{ n: number }[]>`
    select count(*)::int as n from users where username like 'slow%'`;
  assertEquals(n, created, "what was created stays, and nothing more comes");
  const after = await svc.admin.GET("/api/imports/{id}", {
    params: { path: { id } },
  });
  assertEquals(after.data?.created, created);
  assertEquals(after.data?.status, "cancelled");
  const again = await svc.admin.POST("/api/imports/{id}/cancel", {
    params: { path: { id } },
  });
  assertEquals(again.data?.status, "cancelled", "answered as it is");
  const missing = await svc.admin.GET("/api/imports/{id}", {
    params: { path: { id: 999_999 } },
  });
  assertEquals(missing.response.status, 404);
  assertEquals(missing.error, { error: "Import not found" });
});

Deno.test("onConflict: fail refuses, skip counts, update writes the given fields over the user of that name", async () => {
  const svc = await service();
  const created = await svc.admin.POST("/api/users", {
    body: {
      username: "keep",
      name: "Keep Me",
      email: "keep@example.com",
      password: "keep-password",
      role: "viewer",
    },
  });
  assertEquals(created.response.status, 201);
  const changed = person("keep", {
    name: "Kept Changed",
    email: "keep@example.com",
    role: "admin",
  });
  const fail = await postImport(svc, ndjson([changed]));
  const failDone = await finished(svc, fail.body.id);
  assertEquals(await importErrors(svc, fail.body.id), [
    { line: 1, error: "Username or email already exists" },
  ]);
  assertEquals(failDone.failed, 1);

  const skip = await postImport(svc, ndjson([changed]), {
    query: "?onConflict=skip",
  });
  assertEquals((await finished(svc, skip.body.id)).skipped, 1);

  const update = await postImport(svc, ndjson([changed]), {
    query: "?onConflict=update",
  });
  const updated = await finished(svc, update.body.id);
  assertEquals(updated.updated, 1);
  const { data } = await svc.admin.GET("/api/users/{id}", {
    params: { path: { id: created.data!.id } },
  });
  assertEquals(
    { name: data?.name, role: data?.role },
    { name: "Kept Changed", role: "admin" },
  );
  const login = await svc.client().login("keep", "keep-password");
  assert(login.ok, "a record without a password leaves the password as it was");
  const records = await svc.admin.GET("/api/audit", {
    params: { query: { action: "user.updated" } },
  });
  assertEquals(records.data?.[0]?.target?.username, "keep");
});

Deno.test("a dry run counts what an import would do and writes no user", async () => {
  const svc = await service();
  const before = await svc.admin.POST("/api/users", {
    body: {
      username: "before-dry",
      name: "Before",
      email: "before-dry@example.com",
      password: "password-1",
      role: "viewer",
    },
  });
  const res = await postImport(
    svc,
    ndjson([
      person("dry1", { password: "dry1-password" }),
      person("dry2"),
      person("admin"),
      person("dry3", { email: "bad" }),
    ]),
    { query: "?dryRun=true" },
  );
  const done = await finished(svc, res.body.id);
  assertEquals(
    { created: done.created, failed: done.failed, processed: done.processed },
    { created: 2, failed: 2, processed: 4 },
  );
  assertEquals(await importErrors(svc, res.body.id), [
    { line: 3, error: "Username or email already exists" },
    { line: 4, error: "Email must be a valid address" },
  ]);
  const [{ n }] = await svc.sql<{ n: number }[]>`
    select count(*)::int as n from users where username like 'dry%'`;
  assertEquals(n, 0);
  const records = await svc.admin.GET("/api/audit", {
    params: { query: { action: "user.created" } },
  });
  assert(
    !records.data?.some((r) => r.target?.username.startsWith("dry")),
    "no user.created for a dry run",
  );
  const after = await svc.admin.POST("/api/users", {
    body: {
      username: "after-dry",
      name: "After",
      email: "after-dry@example.com",
      password: "password-1",
      role: "viewer",
    },
  });
  assertEquals(
    after.data?.id,
    before.data!.id + 1,
    "a dry run uses up no user id",
  );
});

Deno.test("each created user has its user.created record, beside import.started and import.finished", async () => {
  const svc = await service();
  const res = await postImport(
    svc,
    ndjson(["rec1", "rec2", "rec3"].map((u) => person(u))),
  );
  await finished(svc, res.body.id);
  await svc.store.audit.seal();
  const rows = await svc.sql<{ action: string; target: string | null }[]>`
    select action, target_username as target from audit_events
    where request_id = (select request_id from import_jobs
      where id = ${res.body.id})
    order by id`;
  assertEquals([...rows].map((r) => [r.action, r.target]), [
    ["import.started", null],
    ["user.created", "rec1"],
    ["user.created", "rec2"],
    ["user.created", "rec3"],
    ["import.finished", null],
  ]);
  const [finishedRecord] = await svc.sql<{ details: unknown }[]>`
    select details from audit_events where action = 'import.finished'
    order by id desc limit 1`;
  assertEquals(finishedRecord.details, {
    importId: res.body.id,
    status: "finished",
    counts: {
      total: 3,
      processed: 3,
      created: 3,
      updated: 0,
      skipped: 0,
      failed: 0,
    },
  });
});

Deno.test("deno task import uploads a file, follows the job and lists the refused lines", async () => {
  const svc = await service();
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/users.csv`;
    await Deno.writeTextFile(
      file,
      "username,name,email,password\n" +
        "cli1,Cli One,cli1@example.com,cli1-password\n" +
        "cli2,Cli Two,not-an-address,cli2-password\n",
    );
    const lines: string[] = [];
    const out = {
      log: (l: string) => lines.push(l),
      error: (l: string) => lines.push(l),
    };
    const code = await importUsers([file], {
      USER_ADMIN_URL: svc.baseUrl,
      USER_ADMIN_USERNAME: ADMIN.username,
      USER_ADMIN_PASSWORD: ADMIN.password,
    }, out);
    assertEquals(code, 1, lines.join("\n"));
    assertMatch(
      lines.join("\n"),
      /finished: 2\/2 records: 1 created, 0 updated, 0 skipped, 1 refused\nline 3: Email must be a valid address/,
    );
    const login = await svc.client().login("cli1", "cli1-password");
    assert(login.ok);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno task import signs in an admin with a second factor with USER_ADMIN_CODE, and without it says what to set", async () => {
  const svc = await service();
  const { account, password, recoveryCodes } = await userWithTotp(svc);
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/users.ndjson`;
    await Deno.writeTextFile(
      file,
      JSON.stringify({
        username: "factored-import",
        name: "Factored Import",
        email: "factored-import@example.com",
        password: "factored-import-password",
      }) + "\n",
    );
    const run = async (code?: string) => {
      const lines: string[] = [];
      const out = {
        log: (l: string) => lines.push(l),
        error: (l: string) => lines.push(l),
      };
      const exit = await importUsers([file], {
        USER_ADMIN_URL: svc.baseUrl,
        USER_ADMIN_USERNAME: account.username,
        USER_ADMIN_PASSWORD: password,
        ...code && { USER_ADMIN_CODE: code },
      }, out);
      return { exit, text: lines.join("\n") };
    };
    // No terminal here: nothing to ask, the message says what to set.
    const without = await run();
    assertEquals(without.exit, 2, without.text);
    assertEquals(
      without.text,
      `Login as ${account.username} needs a second factor: set USER_ADMIN_CODE to a current TOTP or recovery code, or use USER_ADMIN_API_KEY`,
    );
    const wrong = await run("000000");
    assertEquals(wrong.exit, 2, wrong.text);
    assertMatch(wrong.text, /^Login as .+ failed: /);
    const withCode = await run(recoveryCodes[0]);
    assertEquals(withCode.exit, 0, withCode.text);
    assertMatch(withCode.text, /1 created/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
