import { jsonArrayBody } from "../src/http/json-array.ts";
import { assert, assertEquals, assertRejects } from "./support/assert.ts";
import {
  loginCookie,
  ON_EMBEDDED,
  startService as startOwnService,
} from "./support/service.ts";
import { seedUsers } from "./support/users.ts";

/**
 * A service of the test's own, bcrypt at its cheapest cost: its work is
 * not this file's subject.
 */
const startService = (env: Record<string, string> = {}) =>
  startOwnService(env, { bcryptCost: 4 });

const TRICKY_NAMES = [
  'quote " and backslash \\',
  "line\nbreak\ttab\r\u0001\u001f\u007f",
  "émoji 🙂 and \u2028 separator",
  "</script>",
];

Deno.test("the streamed user list is byte for byte the JSON array of the users, whatever their fields hold", async () => {
  await using svc = await startService();
  for (const [i, name] of TRICKY_NAMES.entries()) {
    const created = await svc.admin.POST("/api/users", {
      body: {
        username: `tricky${i}`,
        name: `tricky ${i}`,
        email: `tricky${i}@example.com`,
        password: "password-123",
        role: "viewer",
      },
    });
    assertEquals(created.response.status, 201);
    // The API refuses control characters and separators in names now; rows
    // written before that rule (or by hand) may still hold them.
    await svc.sql`update users set name = ${name} where id = ${
      created.data!.id
    }`;
  }
  const one = async (id: number) =>
    (await svc.admin.GET("/api/users/{id}", {
      params: { path: { id } },
    })).data!;
  const { data: text, response } = await svc.admin.GET("/api/users", {
    parseAs: "text",
  });
  assertEquals(response.status, 200);
  assertEquals(response.headers.get("content-type"), "application/json");
  const ids = (JSON.parse(text!) as { id: number }[]).map((u) => u.id);
  assertEquals(ids.length, 1 + TRICKY_NAMES.length);
  // The detail is the list's item, the account's state, its origin and its profile.
  const expected = (await Promise.all(ids.map(one))).map((
    {
      disabled: _,
      lastLoginAt: __,
      mfa: ___,
      department: ____,
      source: _____,
      scim: ______,
      ...item
    },
  ) => item);
  assertEquals(text, JSON.stringify(expected));
  assertEquals(expected.slice(1).map((u) => u.name), TRICKY_NAMES);
});

Deno.test("a list longer than one cursor batch arrives whole, oldest first", async () => {
  await using svc = await startService();
  await seedUsers(svc.sql, 4500);
  const { data, response } = await svc.admin.GET("/api/users");
  assertEquals(response.status, 200);
  assertEquals(data!.length, 4501);
  assertEquals(data![1].username, "bulk1");
  assertEquals(data![4500].username, "bulk4500");
  const order = data!.map((u) => [u.createdAt, u.id] as const);
  assert(order.every((o, i) =>
    i === 0 || order[i - 1][0] < o[0] ||
    (order[i - 1][0] === o[0] && order[i - 1][1] < o[1])
  ));
});

Deno.test("a list that fails before its first byte answers 500 Failed to list users", async () => {
  await using svc = await startService();
  // The session check still works; only the list's own query fails.
  await svc.sql`alter table users rename column created_at to created`;
  const { error, response } = await svc.admin.GET("/api/users");
  assertEquals(response.status, 500);
  assertEquals(error, { error: "Failed to list users" });
  assert(svc.logs.some((l) => l.msg === "request failed"));
});

Deno.test("a JSON array body that fails once streaming ends the body with an error and reports it", async () => {
  const reported: unknown[] = [];
  async function* batches() {
    yield ['{"a":1}', '{"a":2}'];
    yield ['{"a":3}'];
    throw new Error("connection lost");
  }
  const body = await jsonArrayBody(batches(), (e) => reported.push(e));
  assert(body instanceof ReadableStream);
  const reader = body.getReader();
  const first = await reader.read();
  assertEquals(
    new TextDecoder().decode(first.value),
    '[{"a":1},{"a":2},{"a":3}',
  );
  await assertRejects(
    () => reader.read(),
    Error,
    "connection lost",
    "the body must not end as if it were complete",
  );
  assertEquals((reported[0] as Error).message, "connection lost");
});

Deno.test("a JSON array body joins batches with commas, skips empty ones, answers a short list in one piece and closes its source when cancelled", async () => {
  async function* batches() {
    yield [];
    yield ["1"];
    yield [];
    yield ["2", "3"];
    yield [];
  }
  const whole = await new Response(
    await jsonArrayBody(batches(), () => {}),
  ).text();
  assertEquals(whole, "[1,2,3]");
  assertEquals(await jsonArrayBody(empty(), () => {}), "[]");
  async function* oneBatch() {
    yield ["1", "2"];
  }
  assertEquals(await jsonArrayBody(oneBatch(), () => {}), "[1,2]");
  // The store's batches are texts of elements joined by commas.
  async function* joined() {
    yield '{"name":"Zoë"},{"name":"李"}';
  }
  assertEquals(
    await jsonArrayBody(joined(), () => {}),
    '[{"name":"Zoë"},{"name":"李"}]',
  );

  let closed = false;
  async function* endless() {
    try {
      for (let i = 0; i < 1000; i++) yield [String(i)];
    } finally {
      closed = true;
    }
  }
  const stream = await jsonArrayBody(endless(), () => {});
  assert(stream instanceof ReadableStream);
  const reader = stream.getReader();
  await reader.read();
  await reader.cancel();
  assert(closed, "cancelling the body closes the source");
});

async function* empty(): AsyncGenerator<string[]> {}

const encoder = new TextEncoder();

/** Sends a GET over a raw socket (Connection: close) and answers the socket. */
async function rawGet(port: number, path: string, cookie: string) {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  await conn.write(encoder.encode(
    `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: ${cookie}\r\nConnection: close\r\n\r\n`,
  ));
  return conn;
}

/**
 * Reads the socket to its end, `chunk` bytes at most per read with a pause
 * after each: a client on a slow link. Answers every byte received.
 */
async function readSlowly(
  conn: Deno.Conn,
  chunk: number,
  pauseMs: number,
  already?: Uint8Array,
) {
  const parts: Uint8Array[] = already ? [already] : [];
  const buf = new Uint8Array(chunk);
  let total = already?.length ?? 0;
  while (true) {
    const n = await conn.read(buf).catch(() => null);
    if (n === null) break;
    parts.push(buf.slice(0, n));
    total += n;
    if (pauseMs) await new Promise((r) => setTimeout(r, pauseMs));
  }
  const all = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    all.set(p, at);
    at += p.length;
  }
  return all;
}

/** An HTTP/1.1 response with a chunked body: its head, its body, whether the last chunk came. */
function dechunk(bytes: Uint8Array) {
  const text = new TextDecoder().decode(bytes);
  const end = text.indexOf("\r\n\r\n");
  const head = text.slice(0, end);
  assert(/\r\ntransfer-encoding: chunked/i.test(head), head.slice(0, 300));
  const raw = bytes.subarray(encoder.encode(text.slice(0, end + 4)).length);
  const body: Uint8Array[] = [];
  let at = 0;
  let complete = false;
  while (at < raw.length) {
    const lineEnd = raw.indexOf(13, at);
    if (lineEnd < 0) break;
    const size = parseInt(
      new TextDecoder().decode(raw.subarray(at, lineEnd)),
      16,
    );
    if (size === 0) {
      complete = true;
      break;
    }
    const start = lineEnd + 2;
    if (start + size > raw.length) break;
    body.push(raw.subarray(start, start + size));
    at = start + size + 2;
  }
  const joined = new Uint8Array(body.reduce((n, b) => n + b.length, 0));
  let off = 0;
  for (const b of body) {
    joined.set(b, off);
    off += b.length;
  }
  return {
    status: Number(head.split(" ")[1]),
    body: new TextDecoder().decode(joined),
    complete,
  };
}

/**
 * About 20 MB: far more than loopback's socket buffers absorb (up to about
 * 10 MB between a sender and a receiver that reads slowly), so the server
 * has to wait for the reader.
 */
const LARGE = 40_000;
const PADDING = 180;

Deno.test("a reader on a slow link receives every user of a large list, as valid JSON, however long it takes", async () => {
  // A short statement timeout (a third of the deadline): the list must not
  // depend on the whole transfer fitting into one statement.
  await using svc = await startService({ REQUEST_TIMEOUT_MS: "1500" });
  await seedUsers(svc.sql, LARGE, "bulk", PADDING);
  const cookie = await loginCookie(svc);
  const port = Number(new URL(svc.baseUrl).port);
  const conn = await rawGet(port, "/api/users", cookie);
  // 64 KiB every 5 ms at most, well below loopback's speed: the body takes
  // several statement timeouts.
  const answer = dechunk(await readSlowly(conn, 64 * 1024, 5));
  assertEquals(answer.status, 200);
  assert(answer.complete, "the body ended with its last chunk");
  const users = JSON.parse(answer.body) as { username: string }[];
  assertEquals(users.length, LARGE + 1);
  assertEquals(users[LARGE].username, `bulk${LARGE}`);
});

Deno.test("clients that stop reading a large list hold no database connection: health, me and one user still answer", async () => {
  // More stalled readers than the pool has connections (the embedded one has 1).
  const pool = ON_EMBEDDED ? 1 : 3;
  await using svc = await startService({ DATABASE_POOL_MAX: String(pool) });
  await seedUsers(svc.sql, LARGE, "bulk", PADDING);
  const cookie = await loginCookie(svc);
  const port = Number(new URL(svc.baseUrl).port);
  const stalled: Deno.Conn[] = [];
  const heads: Uint8Array[] = [];
  try {
    for (let i = 0; i < pool + 2; i++) {
      const conn = await rawGet(port, "/api/users", cookie);
      stalled.push(conn);
      // The answer has begun (its head and first bytes came); then nothing more is read.
      const first = new Uint8Array(1024);
      const n = await conn.read(first);
      assert(n, "the list started");
      heads.push(first.slice(0, n));
      assert(new TextDecoder().decode(first).startsWith("HTTP/1.1 200"));
    }
    // Let the streams fill the socket buffers and stall.
    await new Promise((r) => setTimeout(r, 500));
    const admin = svc.adminAccount.id;
    for (let round = 0; round < 3; round++) {
      const health = await svc.fetch("/health");
      assertEquals([health.status, await health.json()], [200, {
        status: "ok",
      }]);
      const me = await svc.fetch("/api/auth/me", { headers: { cookie } });
      assertEquals([me.status, (await me.json()).id], [200, admin]);
      const one = await svc.fetch(`/api/users/${admin}`, {
        headers: { cookie },
      });
      assertEquals([one.status, (await one.json()).id], [200, admin]);
    }
    // A stalled reader that resumes still gets the whole list.
    const rest = dechunk(
      await readSlowly(stalled[0], 64 * 1024, 0, heads[0]),
    );
    assert(rest.complete, "the resumed list ended with its last chunk");
    assertEquals(JSON.parse(rest.body).length, LARGE + 1);
  } finally {
    for (const conn of stalled) {
      try {
        conn.close();
      } catch { /* closed */ }
    }
  }
});

Deno.test("a list that fails after its first byte ends the connection without the last chunk, so no client takes it for complete", async () => {
  async function* batches() {
    yield ['{"a":1}'];
    yield ['{"a":2}'];
    await new Promise((r) => setTimeout(r, 20));
    throw new Error("the database went away");
  }
  const reported: unknown[] = [];
  // Deno.serve hands the failed body stream's error to `onError` (by
  // default it prints it, stack and all): expected here, so it is kept.
  const served: unknown[] = [];
  await using server = Deno.serve(
    {
      hostname: "127.0.0.1",
      port: 0,
      onListen: () => {},
      onError: (e) => {
        served.push(e);
        return new Response(null, { status: 500 });
      },
    },
    async () =>
      new Response(await jsonArrayBody(batches(), (e) => reported.push(e))),
  );
  const conn = await rawGet(server.addr.port, "/", "x=1");
  const answer = dechunk(await readSlowly(conn, 64 * 1024, 0));
  conn.close();
  assertEquals(answer.status, 200);
  assertEquals(answer.body, '[{"a":1},{"a":2}');
  assert(!answer.complete, "no last chunk: the transfer is visibly cut");
  assertEquals(reported.length, 1);
  assertEquals(
    [...reported, ...served].map((e) => (e as Error).message),
    ["the database went away", "the database went away"],
  );
});
