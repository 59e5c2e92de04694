/**
 * What a client can make the log say: not its own request ids (unless a
 * trusted proxy vouches for them), and not a flood of stack traces.
 */
import { assert, assertEquals, assertMatch } from "./support/assert.ts";
import { rawHttp, type RawResponse } from "./support/raw.ts";
import {
  type ConfiguredApp,
  sharedService,
  startService,
  type TestService,
} from "./support/service.ts";

// bcrypt's work is not this file's subject: its cheapest cost.
const service = sharedService({}, { bcryptCost: 4 });

/** The service's own ids: a random per-process prefix and a counter. */
const OWN_ID = /^[0-9a-f]{8}-\d+$/;

const portOf = (svc: TestService) => Number(new URL(svc.baseUrl).port);

async function askWithId(svc: Pick<ConfiguredApp, "fetch">, id: string) {
  const res = await svc.fetch("/api/auth/me", {
    headers: { "x-request-id": id },
  });
  await res.body?.cancel();
  return res.headers.get("x-request-id")!;
}

Deno.test("a client's X-Request-Id is neither echoed nor logged unless TRUST_PROXY=true", async () => {
  const svc = await service();
  {
    const id = await askWithId(svc, "forged-trace-42");
    assertMatch(id, OWN_ID);
    const text = JSON.stringify(svc.logs);
    assert(!text.includes("forged-trace-42"), "the forged id was logged");
    const line = svc.logs.find((l) =>
      l.msg === "request" && l.requestId === id
    );
    assertEquals(line?.status, 401);
  }
  {
    const proxied = svc.configured({ TRUST_PROXY: "true" });
    assertEquals(await askWithId(proxied, "proxy-trace-42"), "proxy-trace-42");
    assert(
      svc.logs.some((l) =>
        l.msg === "request" && l.requestId === "proxy-trace-42"
      ),
    );
    // Even from a proxy, an id that could break a log line is replaced.
    assertMatch(await askWithId(proxied, 'a" ,"level":"error'), OWN_ID);
  }
});

Deno.test("a trusted X-Request-Id outside A-Z a-z 0-9 . _ : - is replaced by the service's own", async () => {
  const svc = await service();
  const proxied = svc.configured({ TRUST_PROXY: "true" });
  for (const id of ["a b", "id=42", "trace/1", "é", "a\tb", "<x>", "a,b"]) {
    const answered = await askWithId(proxied, id);
    assertMatch(answered, OWN_ID, JSON.stringify(id));
  }
  assert(
    !svc.logs.some((l) =>
      l.msg === "request" && !OWN_ID.test(`${l.requestId}`)
    ),
    "a refused id was logged",
  );
  for (
    const id of ["Ab.9_x:y-z", "0", "req-00000000-0000-0000-0000-000000000000"]
  ) {
    assertEquals(await askWithId(proxied, id), id);
  }
});

Deno.test("a trusted X-Request-Id longer than 128 characters is replaced; 128 are kept", async () => {
  const svc = await service();
  const proxied = svc.configured({ TRUST_PROXY: "true" });
  const longest = "x".repeat(128);
  assertEquals(await askWithId(proxied, longest), longest);
  for (const id of ["x".repeat(129), "y".repeat(255), "z".repeat(8000)]) {
    assertMatch(await askWithId(proxied, id), OWN_ID, `${id.length}`);
  }
  const logged = svc.logs.map((l) => String(l.requestId ?? ""));
  assertEquals(Math.max(...logged.map((id) => id.length)), 128);
});

Deno.test("with TRUST_PROXY=true, X-Forwarded-For counts only when its first hop is an IP address, stored normalised; else the peer's address", async () => {
  await using svc = await startService({
    TRUST_PROXY: "true",
    LOGIN_MAX_FAILURES: "1000",
  });
  const peer = "127.0.0.1";
  const cases: [string, string][] = [
    ["9".repeat(64_000), peer],
    ["203.0.113.7" + " ".repeat(10) + "x".repeat(64_000), peer],
    ["203.0.113.7", "203.0.113.7"],
    [" 203.0.113.7 , 10.0.0.1", "203.0.113.7"],
    ["2001:DB8:0:0:0:0:0:1", "2001:db8::1"],
    ["2001:0db8:0000:0000:0001:0000:0000:0001", "2001:db8::1:0:0:1"],
    ["::FFFF:198.51.100.2", "198.51.100.2"],
    ["::ffff:c633:6402", "198.51.100.2"],
    ["::1", "::1"],
    ["\u00a0203.0.113.7", peer], // no-break space is not HTTP whitespace
    ["203.0.113.7\t, 10.0.0.1", "203.0.113.7"],
    ["unknown", peer],
    ["203.0.113.7:8080", peer],
    ["[2001:db8::1]", peer],
    ["203.0.113.256", peer],
    ["203.0.113.07", peer],
    ["2001:db8::1::2", peer],
    ["fe80::1%eth0", peer],
    ["", peer],
  ];
  for (const [forwarded, expected] of cases) {
    const before = svc.logs.length;
    const res = await svc.fetch("/api/auth/login", {
      method: "POST",
      headers: { "x-forwarded-for": forwarded },
      body: JSON.stringify({ username: "nobody", password: "wrong-password" }),
    });
    await res.body?.cancel();
    assertEquals(res.status, 401, forwarded.slice(0, 40));
    const id = res.headers.get("x-request-id");
    const line = svc.logs.slice(before).find((l) =>
      l.msg === "request" && l.requestId === id
    );
    assertEquals(line?.ip, expected, `log of ${forwarded.slice(0, 40)}`);
    const audit = await svc.adminFetch(
      "/api/audit?action=login.failed&limit=1",
    );
    const [record] = await audit.json();
    assertEquals(record.requestId, id);
    assertEquals(
      record.clientAddress,
      expected,
      `audit record of ${forwarded.slice(0, 40)}`,
    );
  }
});

Deno.test("a 404 for a 60,000-character path logs a line under 1 KB, with the path's length beside it", async () => {
  const svc = await service();
  const path = "/" + "p".repeat(60_000);
  const res = await svc.fetch(path);
  assertEquals([res.status, await res.json()], [404, { error: "Not found" }]);
  const id = res.headers.get("x-request-id");
  const line = svc.logs.find((l) => l.msg === "request" && l.requestId === id);
  assert(line, "the request was logged");
  const text = JSON.stringify(line);
  assert(text.length < 1024, `a log line of ${text.length} characters`);
  assertEquals(line.path, path.slice(0, 256));
  assertEquals(line.pathLength, 60_001);
  assertEquals(line.status, 404);
});

Deno.test("a request that ends at its deadline is one warning line without a stack, however its body stalls", async () => {
  const svc = await startService({ REQUEST_TIMEOUT_MS: "1500" });
  const before = svc.logs.length;
  let answers: RawResponse[];
  try {
    answers = await Promise.all([0, 1, 2].map(() =>
      rawHttp(portOf(svc), [
        `POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\nConnection: close\r\n\r\n{"user`,
      ])
    ));
  } finally {
    // Stopped before anything is read from its log: its shutdown waits for
    // every connection to end, and with the connection each body read the
    // deadline abandoned fails, so whatever that work logs is logged by then.
    await svc[Symbol.asyncDispose]();
  }
  const lines = svc.logs.slice(before);
  for (const res of answers) {
    assertEquals(res.status, 500);
    assertEquals(JSON.parse(res.body), { error: "Login failed" });
    const id = res.headers.get("x-request-id");
    const about = lines.filter((l) =>
      l.requestId === id && l.msg !== "request"
    );
    assertEquals(about.map((l) => [l.level, l.msg]), [[
      "warn",
      "request deadline passed",
    ]]);
    assertEquals(about[0].answered, "Login failed");
  }
  const text = JSON.stringify(lines);
  assert(!text.includes('"stack"'), "a stack trace was logged");
  assertEquals(lines.filter((l) => l.level === "error"), []);
});
