import { assert, assertEquals } from "./support/assert.ts";
import {
  loginCookie,
  sharedService,
  startService,
  type TestService,
} from "./support/service.ts";

// bcrypt's work is not this file's subject: its cheapest cost.
const service = sharedService({}, { bcryptCost: 4 });

const FOREIGN = "https://evil.example";

/** A sample of answers of every kind: success, each error class, HTML, assets. */
async function sample(svc: TestService) {
  const cookie = await loginCookie(svc);
  const calls: [string, RequestInit][] = [
    ["/health", {}],
    ["/api/users", { headers: { cookie } }],
    ["/api/users", {}],
    ["/api/users/999", { headers: { cookie } }],
    ["/api/users", { method: "POST", body: "{", headers: { cookie } }],
    ["/api/users", { method: "PUT" }],
    ["/nowhere", {}],
    ["/docs", {}],
    ["/openapi.json", {}],
  ];
  const answers = [];
  for (const [path, init] of calls) {
    const res = await svc.fetch(path, init);
    await res.body?.cancel();
    answers.push({ what: `${init.method ?? "GET"} ${path}`, res });
  }
  return answers;
}

Deno.test("every answer carries the security headers, errors included", async () => {
  const svc = await service();
  for (const { what, res } of await sample(svc)) {
    const h = res.headers;
    assertEquals(h.get("x-content-type-options"), "nosniff", what);
    assertEquals(h.get("cross-origin-resource-policy"), "same-origin", what);
    const csp = parseCsp(h.get("content-security-policy") ?? "");
    // Nothing loads by default; /docs names what it loads (tests/docs_test.ts).
    assertEquals(csp.get("default-src"), ["'none'"], what);
    assertEquals(csp.get("frame-ancestors"), ["'none'"], what);
    assert(!h.has("x-powered-by") && !h.has("server"), what);
    if (what.endsWith("/docs")) {
      // The browser page gets the document headers too.
      assertEquals(h.get("x-frame-options"), "SAMEORIGIN", what);
      assertEquals(h.get("referrer-policy"), "no-referrer", what);
      assertEquals(h.get("cross-origin-opener-policy"), "same-origin", what);
    } else {
      assertEquals(h.get("cache-control"), "no-store", what);
    }
  }
});

Deno.test("no CORS headers are ever granted to a foreign origin", async () => {
  const svc = await service();
  const preflight = await svc.fetch("/api/users", {
    method: "OPTIONS",
    headers: {
      origin: FOREIGN,
      "access-control-request-method": "POST",
      "access-control-request-headers": "content-type",
    },
  });
  await preflight.body?.cancel();
  assert(preflight.status >= 400, `preflight ${preflight.status}`);
  const reads = [
    preflight,
    await svc.fetch("/api/users", { headers: { origin: FOREIGN } }),
    await svc.fetch("/health", { headers: { origin: FOREIGN } }),
    await svc.fetch("/openapi.json", { headers: { origin: FOREIGN } }),
    await svc.fetch("/api/auth/login", {
      method: "POST",
      headers: { origin: FOREIGN },
      body: JSON.stringify({ username: "admin", password: "admin-pass-1234" }),
    }),
  ];
  for (const res of reads) {
    await res.body?.cancel();
    const cors = [...res.headers.keys()].filter((k) =>
      k.startsWith("access-control-")
    );
    assertEquals(cors, [], `${res.url} ${res.status}`);
  }
  // The foreign login was refused outright, and no session was started.
  assertEquals(reads[4].status, 403);
  assertEquals(reads[4].headers.getSetCookie(), []);
});

Deno.test("HSTS is sent only over HTTPS, for at least a year", async () => {
  {
    const svc = await service();
    const plain = await svc.fetch("/health");
    await plain.body?.cancel();
    assertEquals(plain.headers.get("strict-transport-security"), null);
    // An untrusted X-Forwarded-Proto does not make it HTTPS.
    const spoofed = await svc.fetch("/health", {
      headers: { "x-forwarded-proto": "https" },
    });
    await spoofed.body?.cancel();
    assertEquals(spoofed.headers.get("strict-transport-security"), null);
  }
  {
    await using svc = await startService({ TRUST_PROXY: "true" });
    for (const path of ["/health", "/api/users", "/nowhere"]) {
      const res = await svc.fetch(path, {
        headers: { "x-forwarded-proto": "https" },
      });
      await res.body?.cancel();
      const maxAge = Number(
        /max-age=(\d+)/.exec(res.headers.get("strict-transport-security")!)
          ?.[1],
      );
      assert(maxAge >= 31_536_000, `${path}: max-age ${maxAge}`);
    }
  }
});

function parseCsp(header: string): Map<string, string[]> {
  return new Map(
    header.split(";").map((d) => d.trim()).filter(Boolean).map((d) => {
      const [name, ...sources] = d.split(/\s+/);
      return [name.toLowerCase(), sources];
    }),
  );
}
