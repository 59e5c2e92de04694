/**
 * A person sees and ends their own sessions (GET and DELETE
 * /api/auth/sessions, DELETE /api/auth/sessions/{sessionId}): with a
 * session, whatever their role; the current one marked; ending it signs
 * out; another person's session is not theirs to end; a key is refused as
 * for POST /api/auth/password; every end recorded as `sessions.ended`.
 */
import {
  auditPages,
  type AuditRecord,
  type UserAdminClient,
} from "@user-admin/client";
import { assert, assertEquals } from "./support/assert.ts";
import { createKey, keyClient } from "./support/api-keys.ts";
import { sharedService, type TestService } from "./support/service.ts";

// bcrypt's work is not this file's subject: its cheapest cost.
const service = sharedService({}, { bcryptCost: 4 });

async function ended(svc: TestService, targetId: number) {
  const all: AuditRecord[] = [];
  for await (
    const page of auditPages(svc.admin, {
      action: "sessions.ended",
      targetId,
    } as never)
  ) all.push(...page);
  return all;
}

/** A viewer signed in twice: two clients, two cookies. */
async function twice(svc: TestService) {
  const { client: first, account, password } = await svc.userClient("viewer");
  const second = svc.client();
  assert((await second.login(account.username, password)).ok);
  return { first, second, account, password };
}

const own = async (client: UserAdminClient) => {
  const listed = await client.get("/api/auth/sessions");
  assert(listed.ok, JSON.stringify(listed));
  return listed.data;
};

Deno.test("a person lists their own sessions, newest first, the request's own marked current", async () => {
  const svc = await service();
  const { first, second, account } = await twice(svc);
  const fromFirst = await own(first);
  const fromSecond = await own(second);
  assertEquals(fromFirst.length, 2);
  // The same sessions, in the same order, as the admin's list shows them.
  const admin = await svc.admin.listSessions(account.id);
  assert(admin.ok);
  const ids = (list: { id: string }[]) => list.map((s) => s.id);
  assertEquals(ids(fromFirst), ids(admin.data));
  assertEquals(ids(fromSecond), ids(admin.data));
  for (const s of fromFirst) {
    assertEquals(Object.keys(s).sort(), [
      "clientAddress",
      "createdAt",
      "current",
      "expiresAt",
      "id",
      "lastSeenAt",
      "userAgent",
    ]);
  }
  // Newest first: the second sign-in is first, and current to its client.
  assertEquals(fromFirst.map((s) => s.current), [false, true]);
  assertEquals(fromSecond.map((s) => s.current), [true, false]);
  // None of another person's.
  const other = await svc.userClient("viewer");
  assertEquals((await own(other.client)).length, 1);
});

Deno.test("ending the other session: its cookie answers 401 at its next request, this one stays, recorded by and of the person", async () => {
  const svc = await service();
  const { first, second, account } = await twice(svc);
  const theOther = (await own(first)).find((s) => !s.current)!;
  const done = await first.delete("/api/auth/sessions/{sessionId}", {
    params: { path: { sessionId: theOther.id } },
  });
  assertEquals(done, { ok: true, status: 200, data: { ok: true, ended: 1 } });
  assertEquals((await second.me()).status, 401);
  assertEquals((await first.me()).status, 200);
  assert(first.hasSession, "this session's cookie is kept");
  assertEquals((await own(first)).map((s) => s.current), [true]);

  const [record, ...more] = await ended(svc, account.id);
  assertEquals(more, []);
  const person = { id: account.id, username: account.username };
  assertEquals(record.actor, person);
  assertEquals(record.target, person);
  assertEquals(record.details, { count: 1 });

  // Ended already: not found.
  assertEquals(
    await first.delete("/api/auth/sessions/{sessionId}", {
      params: { path: { sessionId: theOther.id } },
    }),
    { ok: false, status: 404, error: "Session not found" },
  );
});

Deno.test("ending all others keeps the current one: how many ended, recorded once; none left ends none and records nothing", async () => {
  const svc = await service();
  const { first, second, account, password } = await twice(svc);
  const third = svc.client();
  assert((await third.login(account.username, password)).ok);
  const all = await second.delete("/api/auth/sessions");
  assertEquals(all, { ok: true, status: 200, data: { ok: true, ended: 2 } });
  assertEquals((await first.me()).status, 401);
  assertEquals((await third.me()).status, 401);
  assertEquals((await second.me()).status, 200);
  assertEquals((await own(second)).map((s) => s.current), [true]);
  const again = await second.delete("/api/auth/sessions");
  assertEquals(again, { ok: true, status: 200, data: { ok: true, ended: 0 } });
  const records = await ended(svc, account.id);
  assertEquals(records.map((r) => [r.actor?.id, r.details]), [
    [account.id, { count: 2 }],
  ]);
});

Deno.test("ending the current session signs out: the cookie is cleared as by logout, and the next request answers 401", async () => {
  const svc = await service();
  const { first, second } = await twice(svc);
  const mine = (await own(first)).find((s) => s.current)!;
  const { data, response } = await first.DELETE(
    "/api/auth/sessions/{sessionId}",
    { params: { path: { sessionId: mine.id } } },
  );
  assertEquals([response.status, data], [200, { ok: true, ended: 1 }]);
  const cleared = response.headers.getSetCookie()
    .find((c) => c.startsWith("sid="));
  assert(cleared && /^sid=;/.test(cleared), String(cleared));
  assert(/max-age=0/i.test(cleared), cleared);
  assert(!first.hasSession, "the client forgot the cookie");
  assertEquals((await first.me()).status, 401);
  assertEquals((await second.me()).status, 200);
});

Deno.test("another person's session id, an unknown one and one that is no UUID answer 404 Session not found; theirs goes on", async () => {
  const svc = await service();
  const { client, account } = await svc.userClient("viewer");
  const other = await svc.userClient("viewer");
  const [theirs] = await own(other.client);
  const notFound = {
    ok: false,
    status: 404,
    error: "Session not found",
  } as const;
  for (const sessionId of [theirs.id, crypto.randomUUID(), "not-a-uuid"]) {
    assertEquals(
      await client.delete("/api/auth/sessions/{sessionId}", {
        params: { path: { sessionId } },
      }),
      notFound,
      sessionId,
    );
  }
  // An admin is no exception: their own sessions only.
  assertEquals(
    await svc.admin.delete("/api/auth/sessions/{sessionId}", {
      params: { path: { sessionId: theirs.id } },
    }),
    notFound,
  );
  assertEquals((await other.client.me()).status, 200);
  assertEquals((await client.me()).status, 200);
  assertEquals(await ended(svc, other.account.id), []);
  assertEquals(await ended(svc, account.id), []);
});

Deno.test("without a session 401; with an API key 403 Forbidden, as for the password route, and nothing ends; from a foreign page 403", async () => {
  const svc = await service();
  const anonymous = svc.client();
  const unauthorised = {
    ok: false,
    status: 401,
    error: "Unauthorised",
  } as const;
  assertEquals(await anonymous.get("/api/auth/sessions"), unauthorised);
  assertEquals(await anonymous.delete("/api/auth/sessions"), unauthorised);

  const { client, account } = await svc.userClient("viewer");
  const [mine] = await own(client);
  const { key } = await createKey(svc, account.id, "theirs");
  const withKey = keyClient(svc, key);
  const forbidden = { ok: false, status: 403, error: "Forbidden" } as const;
  assertEquals(await withKey.get("/api/auth/sessions"), forbidden);
  assertEquals(await withKey.delete("/api/auth/sessions"), forbidden);
  assertEquals(
    await withKey.delete("/api/auth/sessions/{sessionId}", {
      params: { path: { sessionId: mine.id } },
    }),
    forbidden,
  );
  // The password route answers a key the same.
  assertEquals(
    await withKey.post("/api/auth/password", {
      body: { currentPassword: "whatever-1", newPassword: "whatever-2" },
    }),
    forbidden,
  );
  const foreign = await client.DELETE("/api/auth/sessions", {
    headers: { origin: "https://evil.example" },
  });
  assertEquals([foreign.response.status, foreign.error], [403, {
    error: "Forbidden",
  }]);
  assertEquals((await client.me()).status, 200);
  assertEquals((await own(client)).length, 1);
  assertEquals(await ended(svc, account.id), []);
});
