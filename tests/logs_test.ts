import { bufferedLines, createLogger } from "../src/log.ts";
import { assert, assertEquals, assertMatch } from "./support/assert.ts";
import { sleep, spawnService } from "./support/process.ts";
import {
  ADMIN,
  sharedService,
  sidOf,
  startService,
  testDatabase,
  type TestService,
} from "./support/service.ts";

// bcrypt's work is not this file's subject: its cheapest cost.
const service = sharedService({}, { bcryptCost: 4 });

/** The service's own ids: a random per-process prefix and a counter. */
const OWN_ID = /^[0-9a-f]{8}-\d+$/;

const post = (svc: TestService, path: string, body: unknown, cookie = "") =>
  svc.fetch(path, {
    method: "POST",
    body: typeof body === "string" ? body : JSON.stringify(body),
    headers: cookie ? { cookie } : {},
  });

const hex = (bytes: Uint8Array) =>
  [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");

Deno.test("logs never contain a password, a session token, a token hash or a password hash", async () => {
  const svc = await service();
  const secrets = new Set<string>([ADMIN.password]);
  const login = await post(svc, "/api/auth/login", ADMIN);
  const token = sidOf(login)!;
  secrets.add(token);
  const cookie = `sid=${token}`;

  // Successes, failures and 500s that all carry secrets in their requests.
  const created = await post(svc, "/api/users", {
    username: "carol",
    name: "Carol",
    email: "carol@example.com",
    password: "carols-secret-1",
    role: "viewer",
  }, cookie);
  secrets.add("carols-secret-1");
  const { id } = await created.json();
  await post(svc, "/api/auth/login", {
    username: "carol",
    password: "carol-wrong-guess",
  }).then((r) => r.body?.cancel());
  secrets.add("carol-wrong-guess");
  await post(svc, "/api/auth/login", {
    username: "nobody",
    password: "nobodys-password",
  }).then((r) => r.body?.cancel());
  secrets.add("nobodys-password");
  const patched = await svc.fetch(`/api/users/${id}`, {
    method: "PATCH",
    body: JSON.stringify({ password: "carols-new-secret" }),
    headers: { cookie },
  });
  assertEquals(patched.status, 200);
  await patched.body?.cancel();
  secrets.add("carols-new-secret");
  await post(svc, "/api/users", '{"password":"unparsable-secret"', cookie)
    .then((r) => r.body?.cancel());
  secrets.add("unparsable-secret");
  await post(svc, "/api/users", {
    username: "dave",
    name: "Dave",
    email: "d",
    password: "daves-short",
    role: "viewer",
  }, cookie).then((r) => r.body?.cancel());
  secrets.add("daves-short");

  // A database failure whose PostgreSQL error detail would show the row, hash included.
  await svc
    .sql`alter table users add constraint no_boom check (name <> 'Boom')`;
  try {
    const failed = await post(svc, "/api/users", {
      username: "boom",
      name: "Boom",
      email: "boom@example.com",
      password: "booms-password",
      role: "viewer",
    }, cookie);
    assertEquals(await failed.json(), { error: "Failed to create user" });
  } finally {
    await svc.sql`alter table users drop constraint no_boom`;
  }
  secrets.add("booms-password");
  await post(svc, "/api/auth/logout", {}, cookie).then((r) => r.body?.cancel());

  for (
    const row of await svc.sql<{ h: string }[]>`
    select password_hash as h from users`
  ) secrets.add(row.h);
  const hashes = await svc.sql<{ h: Uint8Array }[]>`
    select token_hash as h from sessions`;
  secrets.add(hex(await sha256(token)));
  secrets.add(btoa(String.fromCharCode(...await sha256(token))));
  for (const { h } of hashes) secrets.add(hex(h));

  const text = svc.logs.map((l) => JSON.stringify(l)).join("\n");
  assert(svc.logs.some((l) => l.msg === "request failed"), "the 500 is logged");
  for (const secret of secrets) {
    assert(!text.includes(secret), `the log shows ${secret.slice(0, 6)}...`);
  }
  assert(!/\$2[abxy]\$\d\d\$/.test(text), "the log shows a bcrypt hash");
});

Deno.test("every log line is one JSON object with time, level and message, and each request is logged with its id", async () => {
  const svc = await service();
  const before = svc.logs.length;
  const res = await svc.fetch("/api/users/abc");
  await res.body?.cancel();
  for (const line of svc.logs) {
    assertMatch(String(line.time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert(["debug", "info", "warn", "error"].includes(String(line.level)));
    assert(typeof line.msg === "string" && line.msg.length > 0);
  }
  const lines = svc.logs.slice(before).filter((l) => l.msg === "request");
  assertEquals(lines.length, 1);
  const { time: _, ...fields } = lines[0];
  assertEquals({ ...fields, ms: 0 }, {
    level: "info",
    msg: "request",
    requestId: res.headers.get("x-request-id"),
    method: "GET",
    path: "/api/users/abc",
    status: 401,
    ip: "127.0.0.1",
    ms: 0,
  });
});

Deno.test("error responses carry X-Request-Id, the id under which the log records the cause", async () => {
  const svc = await service();
  const cookie = `sid=${sidOf(await post(svc, "/api/auth/login", ADMIN))!}`;
  const errors = [
    await svc.fetch("/api/users"),
    await svc.fetch("/nowhere"),
    await svc.fetch("/api/users", { method: "PUT" }),
    await svc.fetch("/api/users/12345", { headers: { cookie } }),
    await post(svc, "/api/users", "{", cookie),
    await post(svc, "/api/auth/login", {}),
  ];
  const ids = new Set<string>();
  for (const res of errors) {
    const body = await res.json();
    assert(res.status >= 400 && typeof body.error === "string");
    const id = res.headers.get("x-request-id") ?? "";
    assertMatch(id, OWN_ID);
    ids.add(id);
    const logged = svc.logs.find((l) =>
      l.msg === "request" && l.requestId === id
    );
    assertEquals(logged?.status, res.status);
  }
  assertEquals(ids.size, errors.length, "each request has its own id");

  // An unexpected failure: the client sees the endpoint's message and the
  // id; the log has the cause under that id.
  await svc.sql`alter table users rename to users_gone`;
  try {
    const res = await svc.fetch("/api/users", { headers: { cookie } });
    assertEquals(res.status, 500);
    assertEquals(await res.json(), { error: "Failed to list users" });
    const id = res.headers.get("x-request-id");
    const failure = svc.logs.find((l) =>
      l.msg === "request failed" && l.requestId === id
    );
    assert(failure, "the failure is logged under the request id");
    assertEquals(failure.level, "error");
    assertEquals(failure.answered, "Failed to list users");
    assertMatch(
      String((failure.cause as { message: string }).message),
      /users/,
    );
  } finally {
    await svc.sql`alter table users_gone rename to users`;
  }
});

Deno.test("behind a trusted proxy, its X-Request-Id is kept when it is safe, replaced when it is not", async () => {
  await using svc = await startService({ TRUST_PROXY: "true" });
  const ask = async (id: string) => {
    const res = await svc.fetch("/nowhere", {
      headers: { "x-request-id": id },
    });
    await res.body?.cancel();
    return res.headers.get("x-request-id")!;
  };
  assertEquals(await ask("upstream-trace-42"), "upstream-trace-42");
  for (const hostile of ['a" ,"level":"error', "x".repeat(300), "a b", "é"]) {
    const id = await ask(hostile);
    assertMatch(id, OWN_ID, hostile);
  }
  const logged = svc.logs.filter((l) => l.msg === "request").map((l) =>
    l.requestId
  );
  assert(logged.includes("upstream-trace-42"));
  assert(!logged.some((id) => String(id).includes('"')));
});

/**
 * An output that takes at most `most` bytes a write, each after a pause of
 * 0 to 2 ms, and keeps what it took; `writes` counts the calls.
 */
function slowOutput(most: number) {
  const taken: Uint8Array[] = [];
  let writes = 0;
  const take = (bytes: Uint8Array) => {
    const n = Math.min(most, bytes.length);
    taken.push(bytes.slice(0, n));
    return n;
  };
  return {
    write: async (bytes: Uint8Array) => {
      writes++;
      await sleep(Math.floor(Math.random() * 3));
      return take(bytes);
    },
    writeSync: take,
    text: () =>
      new TextDecoder().decode(new Uint8Array(taken.flatMap((b) => [...b]))),
    writes: () => writes,
  };
}

Deno.test("buffered log lines arrive whole and in order, however the output splits its writes, and flush writes the tail", async () => {
  const out = slowOutput(1000);
  const sink = bufferedLines(out, { flushMs: 5, flushBytes: 4096 });
  const sent: string[] = [];
  for (let i = 0; i < 3000; i++) {
    // Lines that may wait, now and then one that may not, from several turns
    // of the event loop, as requests end.
    const line = JSON.stringify({ n: i, pad: "é".repeat(i % 50) });
    sent.push(line);
    sink.line(line, i % 97 !== 0);
    if (i % 100 === 0) await sleep(1);
  }
  await sink.flush();
  assertEquals(out.text(), sent.join("\n") + "\n");
  // Batched: far fewer writes than lines.
  assert(out.writes() < sent.length / 4, `${out.writes()} writes`);
});

Deno.test("a buffered line that may wait is written within the flush interval without a flush; any other line at once", async () => {
  const out = slowOutput(1 << 20);
  const sink = bufferedLines(out, { flushMs: 50 });
  sink.line("access", true);
  await sleep(0);
  assertEquals(out.text(), "", "the access line waits for the interval");
  const deadline = Date.now() + 5_000;
  while (!out.text() && Date.now() < deadline) await sleep(5);
  assertEquals(out.text(), "access\n");
  sink.line("failure", false);
  // At once: its write is begun now, done after the output's pause.
  const begun = Date.now() + 5_000;
  while (out.text() === "access\n" && Date.now() < begun) await sleep(1);
  assertEquals(out.text(), "access\nfailure\n");
});

Deno.test("an exit nobody awaited still writes the buffered lines (flushSync), and an output that fails loses no more than its lines", async () => {
  const out = slowOutput(3);
  const sink = bufferedLines(out, { flushMs: 60_000 });
  sink.line("one", true);
  sink.line("two", true);
  sink.flushSync();
  assertEquals(out.text(), "one\ntwo\n");

  const broken = bufferedLines({
    write: () => Promise.reject(new Error("Broken pipe")),
    writeSync: () => {
      throw new Error("Broken pipe");
    },
  });
  broken.line("lost", false);
  await broken.flush();
  broken.line("lost too", true);
  broken.flushSync();
});

Deno.test("an output that stops reading holds at most the buffer's bound: later lines are dropped and counted in a line once it reads again", async () => {
  let release!: () => void;
  const stalled = new Promise<void>((r) => release = r);
  const taken: string[] = [];
  const sink = bufferedLines({
    write: async (bytes) => {
      await stalled;
      taken.push(new TextDecoder().decode(bytes));
      return bytes.length;
    },
    writeSync: (bytes) => bytes.length,
  }, { flushBytes: 64, pendingMax: 1024 });
  sink.line("first", false); // its write waits for the output
  for (let i = 0; i < 1000; i++) sink.line(`line ${i}`, true);
  release();
  await sink.flush();
  const lines = taken.join("").trimEnd().split("\n");
  assertEquals(lines.slice(0, 3), ["first", "line 0", "line 1"]);
  const said = JSON.parse(lines.at(-1)!);
  assertEquals(said.msg, "log lines dropped: the output did not keep up");
  assertEquals(said.dropped + lines.length - 2, 1000);
  assert(said.dropped > 800, `${said.dropped} dropped`);
});

Deno.test("a line of flat fields is the JSON object of time, level, msg and the fields, long texts cut with their length last", () => {
  const lines: string[] = [];
  const log = createLogger("debug", (line) => lines.push(line));
  const before = Date.now();
  log.info("flat", {
    a: "text",
    n: 1.5,
    yes: true,
    none: null,
    gone: undefined,
    long: "x".repeat(300),
    quote: 'a"b\n',
  });
  log.warn("nested", { cause: new Error("boom"), list: [1] });
  log.request({
    requestId: "abc-1",
    method: "GET",
    path: "/" + "p".repeat(400),
    status: 200,
    ip: "::1",
    ms: 3,
  });
  const after = Date.now();
  const [flat, nested, request] = lines.map((l) => JSON.parse(l));
  for (const { time } of [flat, nested, request]) {
    assertMatch(time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert(Date.parse(time) >= before && Date.parse(time) <= after, time);
  }
  assertEquals(
    lines[0],
    JSON.stringify({
      time: flat.time,
      level: "info",
      msg: "flat",
      a: "text",
      n: 1.5,
      yes: true,
      none: null,
      long: "x".repeat(256),
      quote: 'a"b\n',
      longLength: 300,
    }),
  );
  assertEquals(nested.cause.message, "boom");
  assertEquals(nested.list, [1]);
  assertEquals(
    lines[2],
    JSON.stringify({
      time: request.time,
      level: "info",
      msg: "request",
      requestId: "abc-1",
      method: "GET",
      path: "/" + "p".repeat(255),
      status: 200,
      ip: "::1",
      ms: 3,
      pathLength: 401,
    }),
  );
});

Deno.test("main.ts under load writes every access line whole and in order, and at SIGTERM the buffered tail before it exits", async () => {
  await using db = await testDatabase();
  const svc = await spawnService({ ...db.env, LOG_LEVEL: "info" });
  const ids: string[] = [];
  try {
    // Ten clients at once, as fast as the service answers.
    await Promise.all(Array.from({ length: 10 }, async () => {
      for (let i = 0; i < 100; i++) {
        const res = await fetch(`${svc.baseUrl}/api/auth/me`);
        await res.body?.cancel();
        ids.push(res.headers.get("x-request-id")!);
      }
    }));
  } finally {
    // At once: the last lines are still in the buffer (written within 50 ms).
    svc.kill("SIGTERM");
  }
  assertEquals((await svc.exit()).code, 0);
  const lines = svc.lines;
  assertEquals(lines.filter((l) => "raw" in l), [], "a line was cut");
  const logged = lines.filter((l) => l.msg === "request" && l.status === 401)
    .map((l) => String(l.requestId));
  assertEquals(logged.length, ids.length, "access lines lost");
  assertEquals(new Set(logged), new Set(ids));
  const times = lines.map((l) => Date.parse(String(l.time)));
  assert(times.every((t, i) => i === 0 || t >= times[i - 1]), "out of order");
  assertEquals(lines.map((l) => l.msg).slice(-2), ["shutting down", "stopped"]);
});

async function sha256(text: string) {
  return new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)),
  );
}
