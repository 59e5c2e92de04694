import { assert, assertEquals } from "./support/assert.ts";
import { rawHttp } from "./support/raw.ts";
import {
  loginCookie,
  newUser,
  sharedService,
  startService,
  type TestService,
  userCount,
} from "./support/service.ts";

/** Over the port: these requests are about what crosses the wire. */
// bcrypt's work is not this file's subject: its cheapest cost.
const service = sharedService({}, { inProcess: false, bcryptCost: 4 });

const MiB = 1024 * 1024;

const portOf = (svc: TestService) => Number(new URL(svc.baseUrl).port);

/** The body is exactly `{error: message}` as JSON. */
async function assertError(res: Response, status: number, error: string) {
  assertEquals(res.headers.get("content-type"), "application/json", res.url);
  assertEquals(
    { status: res.status, body: await res.json() },
    { status, body: { error } },
    res.url,
  );
}

Deno.test("ids no user has, in any form, and odd paths answer 404 with an {error} body, change nothing, and never a 5xx", async () => {
  const svc = await service();
  const cookie = await loginCookie(svc);
  const ids = [
    "424242",
    "999999",
    "abc",
    "1.5",
    "%20",
    "99999999999999999999",
    "%00",
    "1e3",
    "1.0",
    "-1",
    "0",
    "0x10",
    "+1",
    "1%20",
    "%201",
    "%ff",
    "%",
    "%EF%BC%91", // a fullwidth digit one
    "..%2f..%2fetc%2fpasswd",
    "null",
    "undefined",
    "NaN",
    "Infinity",
    "2147483648",
    "9".repeat(10_000),
  ];
  for (const id of ids) {
    for (const method of ["GET", "PATCH", "DELETE"]) {
      const res = await svc.fetch(`/api/users/${id}`, {
        method,
        headers: { cookie },
        body: method === "PATCH" ? '{"role":"viewer"}' : undefined,
      });
      await assertError(res, 404, "User not found");
    }
  }
  for (const path of ["/api//users", "/api/users/1/x", "/API/USERS", "/%00"]) {
    await assertError(
      await svc.fetch(path, { headers: { cookie } }),
      404,
      "Not found",
    );
  }
  assertEquals(await userCount(svc), 1);
});

Deno.test("a request line far too long is refused with a 4xx, and the service keeps serving", async () => {
  const svc = await service();
  const res = await rawHttp(portOf(svc), [
    `GET /api/users/${
      "9".repeat(200_000)
    } HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
  ]);
  assert(res.status >= 400 && res.status < 500, `status ${res.status}`);
  assertEquals((await svc.admin.GET("/api/users")).response.status, 200);
});

Deno.test("repeated and malformed cookies never authenticate anyone they should not", async () => {
  const svc = await service();
  const cookie = await loginCookie(svc);
  const token = cookie.slice("sid=".length);
  const denied = [
    "sid",
    "sid=",
    ";;;",
    "=;=",
    "sid==" + "a".repeat(8000),
    `sid=${token}%00`,
    `sid=${token}x`,
    `sid=${token.toLowerCase()}`,
    `sid=junk; ${cookie}`, // the first sid counts
    `${cookie}, other=1`,
    `SID=${token}`,
    `sid=${"\u00e9".repeat(43)}`,
  ];
  for (const c of denied) {
    const res = await svc.fetch("/api/auth/me", { headers: { cookie: c } });
    await assertError(res, 401, "Unauthorised");
  }
  const twoHeaders = new Headers();
  twoHeaders.append("cookie", "sid=junk");
  twoHeaders.append("cookie", cookie);
  await assertError(
    await svc.fetch("/api/auth/me", { headers: twoHeaders }),
    401,
    "Unauthorised",
  );
  for (
    const c of [`${cookie}; sid=junk`, `${cookie}; ${cookie}`, `a=1; ${cookie}`]
  ) {
    const res = await svc.fetch("/api/auth/me", { headers: { cookie: c } });
    assertEquals(res.status, 200, c);
    assertEquals((await res.json()).username, "admin");
  }
  // A viewer's cookie beside an admin's does not lend the viewer admin rights.
  const viewer = await svc.userClient("viewer");
  const viewerCookie = await loginCookie(svc, {
    username: viewer.account.username,
    password: viewer.password,
  });
  const mixed = await svc.fetch("/api/users", {
    headers: { cookie: `${viewerCookie}; ${cookie}` },
  });
  await assertError(mixed, 403, "Forbidden");
});

Deno.test("a 10 MiB body with Content-Length answers 413 on every endpoint that reads a body", async () => {
  const svc = await service();
  const cookie = await loginCookie(svc);
  const big = new TextEncoder().encode(
    JSON.stringify({ username: "x".repeat(10 * MiB) }),
  );
  for (
    const [method, path] of [
      ["POST", "/api/users"],
      ["PATCH", "/api/users/1"],
      ["POST", "/api/auth/login"],
    ]
  ) {
    const res = await svc.fetch(path, {
      method,
      body: big,
      headers: { cookie },
    });
    await assertError(res, 413, "Request body too large");
  }
  // Without a session the guard answers first: the body is not even read.
  const anonymous = await svc.fetch("/api/users", {
    method: "POST",
    body: big,
  });
  await assertError(anonymous, 401, "Unauthorised");
  assertEquals(await userCount(svc), 1);
});

Deno.test("a chunked 10 MiB body without Content-Length answers 413 long before it is all sent", async () => {
  const svc = await service();
  const cookie = await loginCookie(svc);
  for (
    const [method, path] of [["POST", "/api/users"], ["PATCH", "/api/users/1"]]
  ) {
    let pulled = 0;
    const chunk = new Uint8Array(64 * 1024).fill(0x20);
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (pulled >= 10 * MiB) return controller.close();
        pulled += chunk.length;
        controller.enqueue(chunk);
      },
    });
    const res = await fetch(svc.baseUrl + path, {
      method,
      body,
      headers: { cookie },
    });
    await assertError(res, 413, "Request body too large");
    // The service stopped reading at the limit: the sender could not push it
    // all (socket buffers, about 4.5 MiB here, took the rest). Not the RSS:
    // under --parallel other test files share this process and its memory.
    assert(pulled < 10 * MiB, `${pulled} bytes were pulled`);
  }
  assertEquals(await userCount(svc), 1);
});

Deno.test("a body of exactly 64 KiB is read, one byte more is 413, chunked or not", async () => {
  const svc = await service();
  const cookie = await loginCookie(svc);
  const fields = JSON.stringify(newUser("edge"));
  const exact = fields + " ".repeat(64 * 1024 - fields.length);
  for (const chunked of [false, true]) {
    for (const [text, status] of [[exact + " ", 413], [exact, 201]] as const) {
      const bytes = new TextEncoder().encode(text);
      const body = chunked
        ? new ReadableStream<Uint8Array>({
          start(c) {
            for (let i = 0; i < bytes.length; i += 1000) {
              c.enqueue(bytes.slice(i, i + 1000));
            }
            c.close();
          },
        })
        : bytes;
      const res = await fetch(svc.baseUrl + "/api/users", {
        method: "POST",
        body,
        headers: { cookie },
      });
      await res.body?.cancel();
      assertEquals(res.status, status, `chunked=${chunked} ${bytes.length}`);
    }
    await svc.sql`delete from users where username = 'edge'`;
  }
});

Deno.test("a client that trickles its body slowly is served", async () => {
  const svc = await service();
  const cookie = await loginCookie(svc);
  const body = JSON.stringify(newUser("slow"));
  const res = await rawHttp(portOf(svc), [
    `POST /api/users HTTP/1.1\r\nHost: x\r\nCookie: ${cookie}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
    ...body.match(/.{1,8}/g)!,
  ], { pauseMs: 40 });
  assertEquals(res.status, 201);
  assertEquals(JSON.parse(res.body).username, "slow");
});

Deno.test("a client that stalls mid-body is answered at the request deadline, and others are served meanwhile (Deno.serve keeps its socket open afterwards, Connection: close or not: the README's reverse-proxy section covers that)", async () => {
  await using svc = await startService({ REQUEST_TIMEOUT_MS: "1500" });
  const cookie = await loginCookie(svc);
  const port = portOf(svc);
  const stalled = [
    // Declares 200 bytes, sends 10.
    rawHttp(port, [
      `POST /api/users HTTP/1.1\r\nHost: x\r\nCookie: ${cookie}\r\nContent-Length: 200\r\nConnection: close\r\n\r\n{"username`,
    ]),
    // Chunked, never sends the last chunk.
    rawHttp(port, [
      `PATCH /api/users/1 HTTP/1.1\r\nHost: x\r\nCookie: ${cookie}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\n{"rol\r\n`,
    ]),
    rawHttp(port, [
      `POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\nConnection: close\r\n\r\n{`,
    ]),
  ];
  // While those hang on, the service answers everyone else.
  for (let i = 0; i < 5; i++) {
    assertEquals((await svc.admin.GET("/api/users")).response.status, 200);
  }
  const answers = await Promise.all(stalled);
  const expected = ["Failed to create user", "Update failed", "Login failed"];
  answers.forEach((res, i) => {
    assertEquals(res.status, 500);
    assertEquals(JSON.parse(res.body), { error: expected[i] });
    // The deadline's answer carries every answer's headers.
    assert(res.headers.get("x-request-id"));
    assertEquals(res.headers.get("x-content-type-options"), "nosniff");
    assertEquals(res.headers.get("cache-control"), "no-store");
  });
  assertEquals(await userCount(svc), 1);
  const me = await svc.admin.me();
  assert(
    me.ok && me.data.role === "admin",
    "the stalled PATCH changed nothing",
  );
});

Deno.test("many connections that never finish their headers do not stop the service", async () => {
  const svc = await service();
  const port = portOf(svc);
  const idle: Deno.Conn[] = [];
  try {
    for (let i = 0; i < 64; i++) {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port });
      await conn.write(
        new TextEncoder().encode(`GET /api/users HTTP/1.1\r\nHost: x\r\nX-`),
      );
      idle.push(conn);
    }
    for (let i = 0; i < 5; i++) {
      assertEquals((await svc.admin.GET("/api/users")).response.status, 200);
    }
  } finally {
    for (const conn of idle) conn.close();
  }
});

Deno.test("ambiguous framing (Content-Length with Transfer-Encoding) is refused", async () => {
  const svc = await service();
  const cookie = await loginCookie(svc);
  const smuggled =
    `POST /api/users HTTP/1.1\r\nHost: x\r\nCookie: ${cookie}\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\nGET /api/users HTTP/1.1\r\nHost: x\r\n\r\n`;
  const res = await rawHttp(portOf(svc), [smuggled]);
  assertEquals(res.status, 400);
  assertEquals(await userCount(svc), 1);
});
