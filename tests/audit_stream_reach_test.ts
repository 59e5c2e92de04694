/**
 * The change feed, GET /api/audit/stream, for a reader whose `audit:read`
 * is limited to a group's members (docs/delegation.md, "Reach"): it
 * delivers the records about those members only, never one about another
 * user, about no user, or about the reader themselves; so does a key limited
 * to the group. Read with the client's `auditStream` over the port (a
 * stream is what only the wire shows; the harness's recording fetch reads
 * every answer to its end).
 */
import {
  type AuditRecord,
  auditStream,
  createUserAdminClient,
  type UserAdminClient,
} from "@user-admin/client";
import { assert, assertEquals } from "./support/assert.ts";
import { ADMIN, sharedService, type TestService } from "./support/service.ts";
import { dataOf } from "./delegation_support.ts";

const service = sharedService({}, { bcryptCost: 4 });

const path = (id: number) => ({ params: { path: { id } } });

/** A client over the port, signed in: what a stream needs. */
async function signedIn(
  svc: TestService,
  username: string,
  password: string,
): Promise<UserAdminClient> {
  const client = createUserAdminClient({ baseUrl: svc.baseUrl });
  const login = await client.login(username, password);
  assert(login.ok, JSON.stringify(login));
  return client;
}

/** Reads `client`'s stream of the records after `after` into `into` until stopped. */
function reading(
  client: UserAdminClient,
  after: number,
  into: AuditRecord[],
) {
  const stop = new AbortController();
  const done = (async () => {
    for await (
      const r of auditStream({
        client,
        after,
        signal: stop.signal,
        retryMs: 100,
      })
    ) {
      into.push(r);
    }
  })();
  return {
    stop: async () => {
      stop.abort();
      await done;
    },
  };
}

/** Waits until `check` holds, failing after `ms`. */
async function until(check: () => boolean, ms: number, what: string) {
  const start = performance.now();
  while (!check()) {
    if (performance.now() - start > ms) {
      throw new Error(`not within ${ms} ms: ${what}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

const rename = (svc: TestService, id: number, name: string) =>
  dataOf(svc.admin.patch("/api/users/{id}", { ...path(id), body: { name } }));

Deno.test("a reader limited to a group, a person or a key, is streamed the records about its members only", async () => {
  const svc = await service();
  const inside = await svc.userClient("viewer");
  const outside = await svc.userClient("viewer");
  const lead = await svc.userClient("viewer");
  const g = (await dataOf(svc.admin.post("/api/groups", {
    body: { displayName: `Stream ${crypto.randomUUID()}` },
  }))).id;
  assert(
    (await svc.admin.post("/api/groups/{id}/members", {
      ...path(g),
      body: { userIds: [inside.account.id] },
    })).ok,
  );
  const role = await dataOf(svc.admin.post("/api/roles", {
    body: {
      name: `stream reader ${crypto.randomUUID()}`,
      permissions: ["audit:read", "users:read"],
    },
  }));
  assert(
    (await svc.admin.post("/api/assignments", {
      body: { roleId: role.id, userId: lead.account.id, reachGroupId: g },
    })).ok,
  );

  const reader = await signedIn(svc, lead.account.username, lead.password);
  const admin = await signedIn(svc, ADMIN.username, ADMIN.password);
  // The first admin's key limited to the group reads as the lead does.
  const key = createUserAdminClient({
    baseUrl: svc.baseUrl,
    apiKey: (await dataOf(svc.admin.post("/api/users/{id}/keys", {
      ...path(svc.adminAccount.id),
      body: { name: "stream", reachGroupId: g },
    }))).key,
  });
  const head = async () => {
    await svc.store.audit.seal();
    return (await dataOf(svc.admin.get("/api/audit", {
      params: { query: { limit: 1 } },
    })))[0].id;
  };
  // From the same record on, whenever each stream opens.
  const from = await head();
  const limited: AuditRecord[] = [];
  const everyone: AuditRecord[] = [];
  const keyed: AuditRecord[] = [];
  const streams = [
    reading(reader, from, limited),
    reading(admin, from, everyone),
    reading(key, from, keyed),
  ];
  try {
    // Records about someone else, about the reader, about no user, and
    // about the member; the last one, about the member, ends the wait.
    await rename(svc, outside.account.id, "Outside Renamed");
    await rename(svc, lead.account.id, "Lead Renamed");
    await dataOf(svc.admin.post("/api/roles", {
      body: { name: `another ${crypto.randomUUID()}`, permissions: [] },
    }));
    await rename(svc, inside.account.id, "Inside Renamed");
    await rename(svc, outside.account.id, "Outside Again");
    await rename(svc, inside.account.id, "Inside Again");
    const lastId = await head();
    const last = (r: AuditRecord) =>
      r.id === lastId && r.target?.id === inside.account.id;
    await until(() => everyone.some(last), 10_000, "the admin's last record");
    await until(() => limited.some(last), 10_000, "the reader's last record");
    await until(() => keyed.some(last), 10_000, "the key's last record");
  } finally {
    for (const s of streams) await s.stop();
  }

  // The unlimited stream carried every kind.
  const about = (rs: AuditRecord[]) =>
    new Set(rs.map((r) => r.target?.id ?? null));
  for (
    const id of [outside.account.id, lead.account.id, inside.account.id, null]
  ) {
    assert(about(everyone).has(id), `the admin's stream lacks ${id}`);
  }
  // The limited one, only those about the member: every one of them.
  assert(
    limited.every((r) => r.target?.id === inside.account.id),
    JSON.stringify(limited),
  );
  const members = everyone.filter((r) => r.target?.id === inside.account.id)
    .map((r) => r.id);
  assertEquals(limited.map((r) => r.id), members);
  assertEquals(keyed.map((r) => r.id), members);
});
