/**
 * What a client can make the log say: not its own request ids (unless a
 * trusted proxy vouches for them), and not a flood of stack traces.
 */
import { assert, assertEquals, assertMatch } from "./support/assert.ts";
import { rawHttp } from "./support/raw.ts";
import {
  type ConfiguredApp,
  sharedService,
  startService,
  type TestService,
} from "./support/service.ts";

const service = sharedService();

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

Deno.test("a request that ends at its deadline is one warning line without a stack, however its body stalls", async () => {
  await using svc = await startService({ REQUEST_TIMEOUT_MS: "1500" });
  const before = svc.logs.length;
  const answers = await Promise.all([0, 1, 2].map(() =>
    rawHttp(portOf(svc), [
      `POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\nConnection: close\r\n\r\n{"user`,
    ])
  ));
  // Time for work the deadline abandoned to fail, now that the sockets are closed.
  await new Promise((r) => setTimeout(r, 500));
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
