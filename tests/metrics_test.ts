import { assert, assertEquals, assertMatch } from "./support/assert.ts";
import { startService, type TestService } from "./support/service.ts";
import { createConnection, scimClient } from "./scim_support.ts";
import { countInFlight } from "../src/db/in-flight.ts";

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The Prometheus text exposition, parsed into samples. */
function parse(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert(m, `not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (
      const [, k, v] of (m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)
    ) {
      labels[k] = v;
    }
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return samples;
}

async function scrape(svc: TestService) {
  assert(svc.metricsUrl, "the metrics listener is on");
  const res = await fetch(svc.metricsUrl);
  assertEquals(res.status, 200);
  assertMatch(
    res.headers.get("content-type")!,
    /^text\/plain; version=0\.0\.4/,
  );
  const text = await res.text();
  return { text, samples: parse(text) };
}

/** The one sample of `name` whose labels include `labels` (0 when absent). */
function value(
  samples: Sample[],
  name: string,
  labels: Record<string, string> = {},
): number {
  const found = samples.filter((s) =>
    s.name === name &&
    Object.entries(labels).every(([k, v]) => s.labels[k] === v)
  );
  assert(
    found.length <= 1,
    `${name} ${JSON.stringify(labels)}: ${found.length} samples`,
  );
  return found[0]?.value ?? 0;
}

const login = (svc: TestService, username: string, password: string) =>
  svc.fetch("/api/auth/login", {
    method: "POST",
    body: JSON.stringify({ username, password }),
  }).then(async (res) => {
    await res.body?.cancel();
    return res.status;
  });

const status = (res: Promise<Response>) =>
  res.then(async (r) => {
    await r.body?.cancel();
    return r.status;
  });

Deno.test("metrics are off by default, and /metrics is never on the API port", async () => {
  {
    await using svc = await startService();
    assertEquals(svc.config.METRICS_PORT, undefined);
    assertEquals(svc.metricsUrl, undefined);
    assertEquals(await status(svc.fetch("/metrics")), 404);
  }
  await using svc = await startService({ METRICS_PORT: "0" });
  assert(svc.metricsUrl);
  assert(!svc.metricsUrl.startsWith(svc.baseUrl + "/"));
  assertMatch(svc.metricsUrl, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
  assertEquals(await status(svc.fetch("/metrics")), 404);
  assertEquals(await status(svc.adminFetch("/metrics")), 404);
  // The metrics listener serves /metrics and nothing else.
  assertEquals(
    await status(fetch(svc.metricsUrl.replace(/metrics$/, "api/users"))),
    404,
  );
});

Deno.test("requests are counted and timed by method, route template and status; never a raw id", async () => {
  await using svc = await startService({ METRICS_PORT: "0" });
  const { account } = await svc.userClient("viewer");
  const id = account.id;
  assertEquals(await status(svc.adminFetch(`/api/users/${id}`)), 200);
  assertEquals(await status(svc.adminFetch(`/api/users/${id}`)), 200);
  assertEquals(await status(svc.adminFetch("/api/users/987654")), 404);
  assertEquals(await status(svc.adminFetch("/api/users/not-an-id")), 404);
  assertEquals(
    await status(svc.adminFetch(`/api/users/${id}`, {
      method: "PATCH",
      body: JSON.stringify({ role: "admin" }),
    })),
    200,
  );
  assertEquals(await status(svc.adminFetch("/api/users")), 200);
  assertEquals(await status(svc.fetch("/no/such/path/4242")), 404);
  assertEquals(await status(svc.fetch("/health/live")), 200);

  const { text, samples } = await scrape(svc);
  const requests = "useradmin_http_requests_total";
  const get = { method: "GET", route: "/api/users/:id" };
  assertEquals(value(samples, requests, { ...get, status: "200" }), 2);
  assertEquals(value(samples, requests, { ...get, status: "404" }), 2);
  assertEquals(
    value(samples, requests, {
      method: "PATCH",
      route: "/api/users/:id",
      status: "200",
    }),
    1,
  );
  assertEquals(
    value(samples, requests, {
      method: "GET",
      route: "/api/users",
      status: "200",
    }),
    1,
  );
  assertEquals(
    value(samples, requests, {
      method: "GET",
      route: "unmatched",
      status: "404",
    }),
    1,
  );
  // The histogram: its count is the requests', and its buckets grow to it.
  const hist = "useradmin_http_request_duration_seconds";
  assertEquals(value(samples, `${hist}_count`, { ...get, status: "200" }), 2);
  assertEquals(
    value(samples, `${hist}_bucket`, { ...get, status: "200", le: "+Inf" }),
    2,
  );
  assert(value(samples, `${hist}_sum`, { ...get, status: "200" }) > 0);
  const buckets = samples.filter((s) =>
    s.name === `${hist}_bucket` && s.labels.route === get.route &&
    s.labels.status === "200" && s.labels.method === "GET"
  ).map((s) => s.value);
  assert(buckets.length >= 5);
  assertEquals(buckets, [...buckets].sort((a, b) => a - b));

  // No label anywhere carries a raw id or path.
  for (const s of samples) {
    for (const v of Object.values(s.labels)) {
      assert(!/\/\d+(\/|$)/.test(v), `${s.name} ${v}`);
    }
  }
  // Searched in names and labels only: a sample's value (a duration, a byte
  // count) may hold any digits.
  const series = text.split("\n").filter((line) => !line.startsWith("#"))
    .map((line) => line.slice(0, line.lastIndexOf(" "))).join("\n");
  for (
    const raw of [`/api/users/${id}"`, "987654", "not-an-id", "/no/such/path"]
  ) {
    assert(!series.includes(raw), raw);
  }
  // Every route label is a registered template or "unmatched".
  const routes = new Set(
    samples.filter((s) => s.name === requests).map((s) => s.labels.route),
  );
  for (const route of routes) {
    assertMatch(route, /^(unmatched|\/[a-z/]*(:id)?)$/);
  }
});

Deno.test("login outcomes are counted: success, failure and throttled", async () => {
  await using svc = await startService({
    METRICS_PORT: "0",
    LOGIN_MAX_FAILURES: "2",
  });
  const before = (await scrape(svc)).samples;
  const logins = "useradmin_logins_total";
  // The test service logged the admin in once while starting.
  assertEquals(value(before, logins, { outcome: "success" }), 1);
  assertEquals(value(before, logins, { outcome: "failure" }), 0);
  assertEquals(value(before, logins, { outcome: "throttled" }), 0);

  assertEquals(await login(svc, "ghost", "wrong-password-1"), 401);
  assertEquals(await login(svc, "ghost", "wrong-password-2"), 401);
  assertEquals(await login(svc, "ghost", "wrong-password-3"), 429);
  assertEquals(await login(svc, "admin", "admin-pass-1234"), 200);
  assertEquals(
    await status(svc.fetch("/api/auth/login", { method: "POST", body: "{}" })),
    400,
  );

  const after = (await scrape(svc)).samples;
  assertEquals(value(after, logins, { outcome: "success" }), 2);
  assertEquals(value(after, logins, { outcome: "failure" }), 2);
  assertEquals(value(after, logins, { outcome: "throttled" }), 1);
  // A malformed request is no login outcome, but it is a request.
  assertEquals(
    value(after, "useradmin_http_requests_total", {
      method: "POST",
      route: "/api/auth/login",
      status: "400",
    }),
    1,
  );
});

Deno.test("bcrypt jobs and database operations in flight are gauged, and fall back to 0", async () => {
  // A deadline far off: the machine may be busy, and nothing here is about time.
  await using svc = await startService({
    METRICS_PORT: "0",
    REQUEST_TIMEOUT_MS: "60000",
  });
  const bcrypt = "useradmin_bcrypt_jobs_in_flight";
  const db = "useradmin_db_operations_in_flight";

  // Four logins at once: their bcrypt work runs or queues off the main thread.
  const logins = Promise.all(
    Array.from({ length: 4 }, (_, i) => login(svc, "admin", `wrong-pass-${i}`)),
  );
  let settled = false;
  logins.finally(() => settled = true);
  let seenBcrypt = 0;
  while (!settled) {
    seenBcrypt = Math.max(
      seenBcrypt,
      value((await scrape(svc)).samples, bcrypt),
    );
  }
  assertEquals(
    await logins,
    [401, 401, 401, 401],
    JSON.stringify(svc.logs.filter((l) => l.level === "error")),
  );
  assert(seenBcrypt >= 1, `bcrypt jobs seen in flight: ${seenBcrypt}`);

  // A request whose query waits behind a lock is a database operation in
  // flight until it ends.
  let release!: () => void;
  const held = new Promise<void>((r) => release = r);
  let locked!: () => void;
  const isLocked = new Promise<void>((r) => locked = r);
  const lock = svc.sql.begin(async (tx) => {
    await tx`lock table users in access exclusive mode`;
    locked();
    await held;
  });
  await isLocked;
  const list = status(svc.adminFetch("/api/users"));
  let seenDb = 0;
  for (let i = 0; i < 100 && seenDb < 1; i++) {
    seenDb = value((await scrape(svc)).samples, db);
    if (seenDb < 1) await new Promise((r) => setTimeout(r, 10));
  }
  release();
  await lock;
  assertEquals(await list, 200);
  assert(seenDb >= 1, `database operations seen in flight: ${seenDb}`);

  const idle = (await scrape(svc)).samples;
  assertEquals(value(idle, bcrypt), 0);
  assertEquals(value(idle, db), 0);
  assertEquals(
    value(idle, "useradmin_db_pool_max"),
    svc.config.DATABASE_URL ? svc.config.DATABASE_POOL_MAX : 1,
  );
});

Deno.test("a service with metrics on answers a SCIM filter lookup and stays up", async () => {
  await using svc = await startService({ METRICS_PORT: "0" });
  const conn = await createConnection(svc);
  const idp = scimClient(svc, conn.token);
  // What an identity provider asks before it creates each user.
  for (const filter of ['userName eq "ada@example.com"', "members pr"]) {
    const kind = filter.startsWith("members") ? "Groups" : "Users";
    const found = await idp.get(
      `/${kind}?filter=${encodeURIComponent(filter)}`,
    );
    assertEquals(found.status, 200, JSON.stringify(found.body));
    assertEquals(found.body.totalResults, 0);
  }
  await new Promise((r) => setTimeout(r, 50));
  assertEquals(await status(svc.fetch("/health")), 200);
  assertEquals(
    value((await scrape(svc)).samples, "useradmin_db_operations_in_flight"),
    0,
  );
  assertEquals(
    svc.logs.filter((l) => l.level === "error"),
    [],
  );
});

Deno.test("counting the store's calls leaves what they return as it is: a thenable that is no promise of the language's own is neither awaited nor replaced", async () => {
  const touched: string[] = [];
  // A query builder's fragment: a Promise subclass that runs when awaited.
  class Fragment extends Promise<never> {
    static override get [Symbol.species]() {
      return Promise;
    }
    override then<A, B>(...args: Parameters<Promise<never>["then"]>) {
      touched.push("then");
      return super.then(...args) as Promise<A | B>;
    }
  }
  const fragment = new Fragment(() => {});
  let n = 0;
  const counted = countInFlight({
    compile: () => fragment,
    read: async () => await Promise.resolve(7),
  }, { inc: () => n++, dec: () => n-- });
  const compiled = counted.compile();
  assert(compiled === fragment, "the fragment itself comes back");
  const read = counted.read();
  assertEquals(n, 1);
  assertEquals(await read, 7);
  assertEquals(n, 0);
  await new Promise((r) => setTimeout(r, 0));
  assertEquals(touched, []);
});

Deno.test("process metrics are exposed", async () => {
  await using svc = await startService({ METRICS_PORT: "0" });
  const { text, samples } = await scrape(svc);
  assert(value(samples, "process_resident_memory_bytes") > 1024 * 1024);
  assert(value(samples, "process_cpu_seconds_total") > 0);
  assert(value(samples, "process_start_time_seconds") > 1.6e9);
  assertMatch(text, /^# TYPE useradmin_http_requests_total counter$/m);
  assertMatch(
    text,
    /^# TYPE useradmin_http_request_duration_seconds histogram$/m,
  );
  assertMatch(text, /^# HELP useradmin_db_operations_in_flight /m);
});
