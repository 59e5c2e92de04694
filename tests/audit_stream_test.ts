/**
 * The change feed, GET /api/audit/stream: Server-Sent Events of the sealed
 * audit records, over the port (a stream is what only the wire shows), on
 * the embedded database and on PostgreSQL. Streams are read with plain
 * fetch or the client's `auditStream`, never through the harness's
 * recording fetch, which reads every answer to its end.
 */
import {
  type AuditRecord,
  auditStream,
  AuditStreamError,
  createUserAdminClient,
} from "@user-admin/client";
import type { AuditEvent } from "../src/audit/events.ts";
import { loadConfig } from "../src/config.ts";
import { NO_DEADLINE } from "../src/db/write.ts";
import { createLogger } from "../src/log.ts";
import { startService as startInstance } from "../src/server.ts";
import { assert, assertEquals } from "./support/assert.ts";
import { postgresOnly } from "./support/conditions.ts";
import { spawnService } from "./support/process.ts";
import {
  ADMIN,
  loginCookie,
  newUser,
  ON_EMBEDDED,
  startService as startOwnService,
  testDatabase,
  type TestService,
} from "./support/service.ts";

/**
 * A service of the test's own, bcrypt at its cheapest cost: its work is
 * not this file's subject.
 */
const startService = (env: Record<string, string> = {}) =>
  startOwnService(env, { bcryptCost: 4 });

interface Event {
  id: string;
  event: string;
  data: string;
}

/** A stream read as it arrives: its events, comment lines and end. */
interface Stream {
  res: Response;
  events: Event[];
  /** The `id:` of blocks without data: the stream's starting position. */
  positions: string[];
  comments: number;
  /** Whether the body ended, and how. */
  ended?: "cleanly" | "with an error";
  cancel(): Promise<void>;
}

async function openStream(
  baseUrl: string,
  cookie: string | undefined,
  query = "",
  headers: Record<string, string> = {},
): Promise<Stream> {
  const aborted = new AbortController();
  const res = await fetch(`${baseUrl}/api/audit/stream${query}`, {
    headers: { ...(cookie ? { cookie } : {}), ...headers },
    signal: aborted.signal,
  });
  const stream: Stream = {
    res,
    events: [],
    positions: [],
    comments: 0,
    // The body is being read: aborting the request is what ends it.
    cancel: () => Promise.resolve(aborted.abort()),
  };
  if (res.status !== 200 || !res.body) return stream;
  (async () => {
    const decoder = new TextDecoder();
    let buffer = "";
    let fields: Record<string, string> = {};
    try {
      for await (const chunk of res.body!) {
        buffer += decoder.decode(chunk, { stream: true });
        let nl: number;
        while ((nl = buffer.indexOf("\n")) >= 0) {
          const line = buffer.slice(0, nl);
          buffer = buffer.slice(nl + 1);
          if (line === "") {
            if (fields.data !== undefined) {
              stream.events.push(fields as unknown as Event);
            } else if (fields.id !== undefined) {
              stream.positions.push(fields.id);
            }
            fields = {};
          } else if (line.startsWith(":")) stream.comments++;
          else {
            const colon = line.indexOf(": ");
            fields[line.slice(0, colon)] = line.slice(colon + 2);
          }
        }
      }
      stream.ended = "cleanly";
    } catch {
      stream.ended = "with an error";
    }
  })();
  return stream;
}

/** Polls `check` until it holds, failing after `ms`; answers the time it took. */
async function until(
  check: () => boolean | Promise<boolean>,
  ms: number,
  what: string,
): Promise<number> {
  const start = performance.now();
  while (!(await check())) {
    if (performance.now() - start > ms) {
      throw new Error(`not within ${ms} ms: ${what}`);
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  return performance.now() - start;
}

/** Every record of the trail, oldest first, as GET /api/audit answers them. */
async function trail(svc: TestService): Promise<unknown[]> {
  const res = await svc.adminFetch("/api/audit?limit=1000");
  assertEquals(res.status, 200);
  return (await res.json()).reverse();
}

/** What GET /api/audit answers for each record, as text: the event's data. */
async function trailTexts(svc: TestService): Promise<string[]> {
  return (await trail(svc)).map((r) => JSON.stringify(r));
}

const ids = (s: Stream) => s.events.map((e) => Number(e.id));

async function createUsers(svc: TestService, names: string[]) {
  for (const name of names) {
    const res = await svc.admin.post("/api/users", { body: newUser(name) });
    assert(res.ok, `create ${name}`);
  }
}

/** One sample of the service's /metrics. */
async function metric(svc: TestService, name: string): Promise<number> {
  const text = await (await fetch(svc.metricsUrl!)).text();
  const sample = new RegExp(`^${name} (\\S+)$`, "m").exec(text);
  assert(sample, `${name} in /metrics`);
  return Number(sample[1]);
}

/** A client of its own, with plain fetch, logged in as the first admin. */
async function adminClient(baseUrl: string) {
  const client = createUserAdminClient({ baseUrl });
  const login = await client.login(ADMIN.username, ADMIN.password);
  assert(login.ok);
  return client;
}

Deno.test("after=0 streams every record oldest first: id, event and data as GET /api/audit serialises it; then new ones as they are sealed", async () => {
  await using svc = await startService();
  await createUsers(svc, ["ann", "ben"]);
  const cookie = await loginCookie(svc);
  const s = await openStream(svc.baseUrl, cookie, "?after=0");
  assertEquals(s.res.status, 200);
  assertEquals(
    s.res.headers.get("content-type"),
    "text/event-stream; charset=utf-8",
  );
  const before = await trailTexts(svc);
  await until(() => s.events.length >= before.length, 3000, "the backlog");
  assertEquals(s.events.map((e) => e.data), before.slice(0, s.events.length));
  for (const e of s.events) {
    const record = JSON.parse(e.data);
    assertEquals(e.id, String(record.id));
    assertEquals(e.event, record.action);
  }
  // Live: a new record arrives, after the others, in order.
  await createUsers(svc, ["cat"]);
  const after = await trailTexts(svc);
  await until(() => s.events.length === after.length, 1000, "the new record");
  assertEquals(s.events.map((e) => e.data), after);
  assertEquals(
    ids(s),
    Array.from({ length: after.length }, (_, i) => i + 1),
  );
  assertEquals(s.events.at(-1)!.event, "user.created");
  await s.cancel();
});

Deno.test("without after or Last-Event-ID only new records come; Last-Event-ID (over ?after=) and ?after= resume without gap or repeat", async () => {
  await using svc = await startService();
  const cookie = await loginCookie(svc);
  const fresh = await openStream(svc.baseUrl, cookie);
  assertEquals(fresh.res.status, 200);
  // It opens with its position, the head, as the id to resume from.
  const head = (await trailTexts(svc)).length;
  await until(() => fresh.positions.length === 1, 1000, "the opening id");
  assertEquals(fresh.positions, [String(head)]);
  await fresh.cancel();
  await createUsers(svc, ["dan"]);
  const all = await trailTexts(svc);
  // Resumed from that position, nothing written meanwhile is missed.
  const again = await openStream(svc.baseUrl, cookie, "", {
    "Last-Event-ID": fresh.positions[0],
  });
  await until(() => again.events.length === 1, 1000, "the one new record");
  assertEquals(again.events[0].data, all.at(-1));
  assertEquals(again.positions, [String(head)]);
  await again.cancel();

  const resumed = await openStream(svc.baseUrl, cookie, "?after=1", {
    "Last-Event-ID": "2",
  });
  const byQuery = await openStream(svc.baseUrl, cookie, "?after=2");
  const expected = all.slice(2);
  await until(
    () => resumed.events.length >= expected.length,
    3000,
    "resumed",
  );
  await until(
    () => byQuery.events.length >= expected.length,
    3000,
    "by query",
  );
  await createUsers(svc, ["eve"]);
  const now = await trailTexts(svc);
  for (const s of [resumed, byQuery]) {
    await until(() => s.events.length === now.length - 2, 1000, "eve");
    assertEquals(s.events.map((e) => e.data), now.slice(2));
    await s.cancel();
  }
});

Deno.test("the action filter (repeatable) passes only those actions; bad values answer 400 naming the parameter", async () => {
  await using svc = await startService();
  const cookie = await loginCookie(svc);
  const s = await openStream(
    svc.baseUrl,
    cookie,
    "?after=0&action=user.created&action=user.deleted",
  );
  const one = await openStream(svc.baseUrl, cookie, "?after=0&action=logout");
  await createUsers(svc, ["fay"]);
  const fay = await svc.admin.get("/api/users", {
    params: { query: { username: "fay" } },
  });
  assert(fay.ok);
  const gone = await svc.admin.delete("/api/users/{id}", {
    params: { path: { id: fay.data[0].id } },
  });
  assert(gone.ok);
  const expected = (await trailTexts(svc)).filter((t) =>
    /"action":"user\.(created|deleted)"/.test(t)
  );
  await until(() => s.events.length === 2, 1000, "both records");
  assertEquals(s.events.map((e) => e.data), expected);
  assertEquals(s.events.map((e) => e.event), ["user.created", "user.deleted"]);
  assertEquals(one.events, []);
  await s.cancel();
  await one.cancel();

  for (
    const [query, headers, message] of [
      ["?action=user.made", {}, "Invalid query parameter: action"],
      [
        "?action=user.created&action=nope",
        {},
        "Invalid query parameter: action",
      ],
      ["?after=-1", {}, "Invalid query parameter: after"],
      ["?after=1.5", {}, "Invalid query parameter: after"],
      ["", { "Last-Event-ID": "x" }, "Invalid Last-Event-ID"],
    ] as const
  ) {
    const res = await fetch(`${svc.baseUrl}/api/audit/stream${query}`, {
      headers: { cookie, ...headers },
    });
    assertEquals(res.status, 400, query);
    assertEquals(await res.json(), { error: message });
  }
});

Deno.test("a comment line comes every AUDIT_STREAM_HEARTBEAT_MS", async () => {
  await using svc = await startService({ AUDIT_STREAM_HEARTBEAT_MS: "100" });
  const s = await openStream(svc.baseUrl, await loginCookie(svc));
  await until(() => s.comments >= 3, 1000, "three comment lines");
  assertEquals(s.events, []);
  await s.cancel();
});

Deno.test("no session: 401; a viewer: 403; each with the contract's message", async () => {
  await using svc = await startService();
  const none = await fetch(`${svc.baseUrl}/api/audit/stream`);
  assertEquals(none.status, 401);
  assertEquals(await none.json(), { error: "Unauthorised" });
  const viewer = await svc.userClient("viewer", { password: "viewer-pass-1" });
  const cookie = await loginCookie(svc, {
    username: viewer.account.username,
    password: "viewer-pass-1",
  });
  const res = await fetch(`${svc.baseUrl}/api/audit/stream?after=0`, {
    headers: { cookie },
  });
  assertEquals(res.status, 403);
  assertEquals(await res.json(), { error: "Forbidden" });
});

Deno.test("past retention: an after below the sweep's anchor answers 410; from the anchor on it streams", async () => {
  await using svc = await startService();
  const cookie = await loginCookie(svc);
  // after=0 with nothing removed streams from the first record.
  const first = await openStream(svc.baseUrl, cookie, "?after=0");
  await until(() => first.events.length > 0, 2000, "the first record");
  assertEquals(first.events[0].id, "1");
  await first.cancel();
  await createUsers(svc, ["gus"]);
  await svc.store.audit.seal();
  // Every record older than a millisecond goes.
  await new Promise((r) => setTimeout(r, 20));
  const removed = await svc.store.audit.sweep(1 / 86_400_000);
  assert(removed > 2, `removed ${removed}`);
  const { anchorId } = await svc.store.audit.ends();
  for (const query of ["?after=0", `?after=${anchorId - 1}`]) {
    const res = await fetch(`${svc.baseUrl}/api/audit/stream${query}`, {
      headers: { cookie },
    });
    assertEquals(res.status, 410, query);
    assertEquals(await res.json(), {
      error: "Event history no longer available",
    });
  }
  const header = await fetch(`${svc.baseUrl}/api/audit/stream`, {
    headers: { cookie, "Last-Event-ID": "0" },
  });
  assertEquals(header.status, 410);
  await header.body?.cancel();
  const kept = await openStream(svc.baseUrl, cookie, `?after=${anchorId}`);
  assertEquals(kept.res.status, 200);
  await createUsers(svc, ["hal"]);
  await until(() => kept.events.length > 0, 2000, "a kept record");
  assertEquals(Number(kept.events[0].id), anchorId + 1);
  await kept.cancel();
});

Deno.test("logging out ends the session's stream within 5 s; so does losing the admin role", async () => {
  await using svc = await startService();
  const cookie = await loginCookie(svc);
  const s = await openStream(svc.baseUrl, cookie);
  const other = await svc.userClient("admin", { password: "other-admin-1" });
  const otherCookie = await loginCookie(svc, {
    username: other.account.username,
    password: "other-admin-1",
  });
  const demoted = await openStream(svc.baseUrl, otherCookie);
  assertEquals(demoted.res.status, 200);

  const out = await fetch(`${svc.baseUrl}/api/auth/logout`, {
    method: "POST",
    headers: { cookie },
  });
  assertEquals(out.status, 200);
  await out.body?.cancel();
  const ms = await until(() => s.ended !== undefined, 5000, "stream ended");
  assertEquals(s.ended, "cleanly", `after ${ms} ms`);

  const patched = await svc.admin.patch("/api/users/{id}", {
    params: { path: { id: other.account.id } },
    body: { role: "viewer" },
  });
  assert(patched.ok);
  await until(() => demoted.ended !== undefined, 5000, "demoted stream ended");
});

Deno.test("a reader that stops reading is dropped past 1 MiB and auditStream resumes by its last id: every record once, in order", async () => {
  await using svc = await startService({ METRICS_PORT: "0" });
  const client = await adminClient(svc.baseUrl);
  const stop = new AbortController();
  const records = auditStream({ client, after: 0, signal: stop.signal });
  const got: AuditRecord[] = [];
  got.push((await records.next()).value!);
  await until(
    async () => await metric(svc, "useradmin_audit_streams_open") === 1,
    2000,
    "one stream open",
  );
  // About 24 MB of records while nothing reads: well past 1 MiB and what the
  // sockets on both ends buffer.
  const big = "x".repeat(60_000);
  for (let i = 0; i < 400; i++) {
    const event: AuditEvent = {
      action: "user.created",
      actor: null,
      target: { id: 1_000_000 + i, username: `${big}${i}` },
      details: { role: "viewer" },
      requestId: null,
      clientAddress: null,
      via: null,
    };
    await svc.store.audit.record(event, NO_DEADLINE);
  }
  await svc.store.audit.seal();
  // Dropped: the service no longer holds the stream.
  await until(
    async () => await metric(svc, "useradmin_audit_streams_open") === 0,
    10_000,
    "the slow stream dropped",
  );
  const { headId } = await svc.store.audit.ends();
  for await (const r of records) {
    got.push(r);
    if (r.id >= headId) break;
  }
  stop.abort();
  assertEquals(
    got.map((r) => r.id),
    Array.from({ length: headId }, (_, i) => i + 1),
  );
  assertEquals(got.at(-1)!.target!.username, `${big}399`);
});

Deno.test("20 idle streams hold no database connection and no store call", async () => {
  await using svc = await startService({ METRICS_PORT: "0" });
  const cookie = await loginCookie(svc);
  const streams: Stream[] = [];
  for (let i = 0; i < 20; i++) {
    const s = await openStream(svc.baseUrl, cookie);
    assertEquals(s.res.status, 200);
    streams.push(s);
  }
  assertEquals(await metric(svc, "useradmin_audit_streams_open"), 20);
  await until(
    async () => await metric(svc, "useradmin_db_operations_in_flight") === 0,
    3000,
    "no store call in flight",
  );
  if (!ON_EMBEDDED) {
    // Connections of this database doing something (a query, or an open
    // transaction): none once the streams idle, the listener's included.
    const busy = async () => {
      const [{ n }] = await svc.sql<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid()
          and state is distinct from 'idle'`;
      return n;
    };
    await until(async () => await busy() === 0, 3000, "no busy connection");
  }
  // Still served: a new record reaches all twenty.
  await createUsers(svc, ["ida"]);
  for (const s of streams) {
    await until(() => s.events.length === 1, 1000, "ida on every stream");
  }
  await Promise.all(streams.map((s) => s.cancel()));
  await until(
    async () => await metric(svc, "useradmin_audit_streams_open") === 0,
    2000,
    "closed streams counted out",
  );
});

Deno.test({
  ...postgresOnly(
    "a record written through a second instance on the same database reaches a stream on the first within 1 s",
  ),
  async fn() {
    await using svc = await startService();
    const config = loadConfig({
      DATABASE_URL: svc.config.DATABASE_URL,
      HOST: "127.0.0.1",
      PORT: "0",
      LOG_LEVEL: "silent",
    });
    const second = await startInstance(config, {
      log: createLogger("silent", () => {}),
    });
    try {
      const s = await openStream(svc.baseUrl, await loginCookie(svc));
      const cookie = await loginCookie({
        fetch: (path, init) => fetch(second.url + path, init),
      });
      const delays: number[] = [];
      for (let i = 0; i < 5; i++) {
        const res = await fetch(`${second.url}/api/users`, {
          method: "POST",
          headers: { cookie },
          body: JSON.stringify(newUser(`jo${i}`)),
        });
        assertEquals(res.status, 201);
        await res.body?.cancel();
        // The login on the second instance is a record too.
        delays.push(
          await until(
            () => s.events.filter((e) => e.event === "user.created").length > i,
            1000,
            `jo${i} on the first instance's stream`,
          ),
        );
      }
      console.log(
        `arrival after the write answered: ${delays.map(Math.round)} ms`,
      );
      await s.cancel();
    } finally {
      await second.close();
    }
  },
});

Deno.test("SIGTERM with open streams: they end and the service exits 0 within 2 s", async () => {
  await using db = await testDatabase();
  const running = await spawnService({
    ...db.env,
    ADMIN_USERNAME: ADMIN.username,
    ADMIN_PASSWORD: ADMIN.password,
  });
  try {
    const cookie = await loginCookie({
      fetch: (path, init) => fetch(running.baseUrl + path, init),
    });
    const streams: Stream[] = [];
    for (let i = 0; i < 3; i++) {
      streams.push(await openStream(running.baseUrl, cookie, "?after=0"));
    }
    await until(() => streams.every((s) => s.events.length > 0), 3000, "open");
    const signalled = performance.now();
    running.kill("SIGTERM");
    const status = await running.exit(2000);
    const ms = Math.round(performance.now() - signalled);
    assertEquals(status.code, 0, `still running ${ms} ms after SIGTERM`);
    await until(() => streams.every((s) => s.ended), 1000, "streams ended");
  } finally {
    await running[Symbol.asyncDispose]();
  }
});

Deno.test("auditStream answers the service's refusals as AuditStreamError", async () => {
  await using svc = await startService();
  const client = createUserAdminClient({ baseUrl: svc.baseUrl });
  try {
    await auditStream({ client }).next();
    throw new Error("no error");
  } catch (e) {
    assert(e instanceof AuditStreamError, String(e));
    assertEquals([e.status, e.error], [401, "Unauthorised"]);
  }
});

Deno.test("the request deadline does not end a stream; HEAD answers the headers without opening one", async () => {
  await using svc = await startService({
    REQUEST_TIMEOUT_MS: "1000",
    AUDIT_STREAM_HEARTBEAT_MS: "100",
    METRICS_PORT: "0",
  });
  const cookie = await loginCookie(svc);
  const head = await fetch(`${svc.baseUrl}/api/audit/stream`, {
    method: "HEAD",
    headers: { cookie },
  });
  assertEquals(head.status, 200);
  assertEquals(
    head.headers.get("content-type"),
    "text/event-stream; charset=utf-8",
  );
  assertEquals(await metric(svc, "useradmin_audit_streams_open"), 0);
  const opened = performance.now();
  const s = await openStream(svc.baseUrl, cookie);
  // Half a deadline past its deadline, counted from the stream's request,
  // the stream still flows: comment lines, then a new record.
  const deadline = svc.config.REQUEST_TIMEOUT_MS;
  await new Promise((r) =>
    setTimeout(r, opened + deadline * 1.5 - performance.now())
  );
  const comments = s.comments;
  await until(() => s.comments > comments, 1000, "a comment line");
  await createUsers(svc, ["kim"]);
  await until(() => s.events.length === 1, 1000, "kim");
  assertEquals(s.ended, undefined);
  await s.cancel();
});
