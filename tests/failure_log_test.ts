/**
 * Every 500 leaves its cause in the log under the request's id, the ones
 * the contract itself prescribes included.
 */
import { assert, assertEquals, assertMatch } from "./support/assert.ts";
import { ADMIN, sharedService, sidOf } from "./support/service.ts";

// bcrypt's work is not this file's subject: its cheapest cost.
const service = sharedService({}, { bcryptCost: 4 });

Deno.test("a POST /api/users body that is not JSON answers 500 Failed to create user, and the log has its cause under the request id", async () => {
  const svc = await service();
  const login = await svc.fetch("/api/auth/login", {
    method: "POST",
    body: JSON.stringify(ADMIN),
  });
  const cookie = `sid=${sidOf(login)!}`;
  for (const body of ['{"username":"carol"', new Uint8Array([0xff, 0xfe])]) {
    const res = await svc.fetch("/api/users", {
      method: "POST",
      body,
      headers: { cookie },
    });
    assertEquals(res.status, 500);
    assertEquals(await res.json(), { error: "Failed to create user" });
    const id = res.headers.get("x-request-id");
    assert(id, "the answer carries its request id");
    const failure = svc.logs.find((l) =>
      l.msg === "request failed" && l.requestId === id
    );
    assert(failure, `no cause logged under ${id}`);
    assertEquals(failure.level, "error");
    assertEquals(failure.answered, "Failed to create user");
    assertMatch(
      String((failure.cause as { message?: string })?.message),
      /^request body is not (JSON|UTF-8)$/,
    );
    // The body is the client's: it never reaches the log.
    assert(!JSON.stringify(failure).includes("carol"));
  }
});
