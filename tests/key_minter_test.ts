/**
 * A key records the admin who minted it. A key minted for another user is
 * revoked, for good, when its minter is deleted, disabled or demoted, in the
 * same write; a user's own keys are not. Races between a mint and its
 * minter's removal leave no key behind.
 */
import type { UserAdminClient } from "@user-admin/client";
import { assert, assertEquals } from "./support/assert.ts";
import { createKey, keyClient } from "./support/api-keys.ts";
import { sharedService, type TestService } from "./support/service.ts";

// bcrypt's work is not this file's subject: its cheapest cost.
const service = sharedService({}, { bcryptCost: 4 });

const UNAUTHORISED = {
  ok: false,
  status: 401,
  error: "Unauthorised",
} as const;

/** How the minter loses the right to mint, as another admin does it. */
const REMOVALS = {
  demoted: (svc: TestService, id: number) =>
    svc.admin.patch("/api/users/{id}", {
      params: { path: { id } },
      body: { role: "viewer" },
    }),
  disabled: (svc: TestService, id: number) =>
    svc.admin.disableUser(id, { reason: "left" }),
  deleted: (svc: TestService, id: number) =>
    svc.admin.delete("/api/users/{id}", { params: { path: { id } } }),
};
type Removal = keyof typeof REMOVALS;

/** A user as the trail names them. */
const party = (u: { id: number; username: string }) => ({
  id: u.id,
  username: u.username,
});

/** The key's answer to `GET /api/auth/me`: 200 while it lets its owner in. */
const meWith = async (svc: TestService, key: string) =>
  (await keyClient(svc, key).me()).status;

/** The `key.revoked` records of these keys, oldest first, as the API shows them. */
async function revokedRecords(svc: TestService, keyIds: number[]) {
  const records = await svc.admin.get("/api/audit", {
    params: { query: { action: "key.revoked", limit: 1000 } },
  });
  assert(records.ok, JSON.stringify(records));
  return records.data
    .filter((r) => keyIds.includes(Number(r.details.keyId)))
    .reverse();
}

/** The names of the user's listed keys, newest first. */
async function listed(svc: TestService, userId: number) {
  const list = await svc.admin.get("/api/users/{id}/keys", {
    params: { path: { id: userId } },
  });
  assert(list.ok, JSON.stringify(list));
  return list.data.map((k) => k.name);
}

Deno.test("a key shows who minted it in the 201 and the list; a key made before keys recorded their minter counts as minted by its owner", async () => {
  const svc = await service();
  const root = party(svc.adminAccount);
  const viewer = await svc.userClient("viewer");
  const other = await svc.userClient("admin");
  const owner = party(viewer.account);

  const byRoot = await createKey(svc, owner.id, "by root");
  assertEquals(byRoot.createdBy, root);
  const byOther = await createKey(svc, owner.id, "by other", other.client);
  assertEquals(byOther.createdBy, party(other.account));
  // A key minted with a key: its minter is the key's owner.
  const rootKey = await createKey(svc, root.id, "root's own");
  assertEquals(rootKey.createdBy, root);
  const viaKey = await keyClient(svc, rootKey.key).post(
    "/api/users/{id}/keys",
    { params: { path: { id: owner.id } }, body: { name: "via key" } },
  );
  assert(viaKey.ok, JSON.stringify(viaKey));
  assertEquals(viaKey.data.createdBy, root);
  // As a release without the minter's column inserts it.
  await svc.sql`
    insert into api_keys (user_id, name, prefix, secret_hash)
    values (${owner.id}, 'older', 'uak_older00', sha256('older'::bytea))`;

  const list = await svc.admin.get("/api/users/{id}/keys", {
    params: { path: { id: owner.id } },
  });
  assert(list.ok, JSON.stringify(list));
  assertEquals(
    list.data.map((k) => [k.name, k.createdBy]),
    [
      ["older", owner],
      ["via key", root],
      ["by other", byOther.createdBy],
      ["by root", root],
    ],
  );
  const { key: _, ...shown } = byOther;
  assertEquals(list.data[2], shown);
});

for (const removal of Object.keys(REMOVALS) as Removal[]) {
  Deno.test(`an admin ${removal}: the keys they minted for others are revoked, each recorded as key.revoked {keyId, name, reason: "minter removed"}; others' keys stay`, async () => {
    const svc = await service();
    const minter = await svc.userClient("admin");
    const [alice, bob] = [
      await svc.userClient("viewer"),
      await svc.userClient("viewer"),
    ];
    const forAlice = await createKey(
      svc,
      alice.account.id,
      "for alice",
      minter.client,
    );
    const forBob = await createKey(
      svc,
      bob.account.id,
      "for bob",
      minter.client,
    );
    const byRoot = await createKey(svc, alice.account.id, "by root");
    // Revoked by hand before: no second record.
    const gone = await createKey(svc, bob.account.id, "gone", minter.client);
    const revoke = await svc.admin.delete("/api/users/{id}/keys/{keyId}", {
      params: { path: { id: bob.account.id, keyId: gone.id } },
    });
    assert(revoke.ok);
    for (const k of [forAlice, forBob, byRoot]) {
      assertEquals(await meWith(svc, k.key), 200);
    }

    const removed = await REMOVALS[removal](svc, minter.account.id);
    assert(removed.ok, JSON.stringify(removed));

    assertEquals(await meWith(svc, forAlice.key), 401);
    assertEquals(await meWith(svc, forBob.key), 401);
    assertEquals(await meWith(svc, byRoot.key), 200);
    assertEquals(await listed(svc, alice.account.id), ["by root"]);
    assertEquals(await listed(svc, bob.account.id), []);

    const records = await revokedRecords(svc, [
      forAlice.id,
      forBob.id,
      byRoot.id,
      gone.id,
    ]);
    const [root, a, b] = [svc.adminAccount, alice.account, bob.account].map(
      party,
    );
    const reason = "minter removed";
    assertEquals(
      records.map((r) => [r.actor, r.target, r.details]),
      [
        [root, b, { keyId: gone.id, name: "gone" }],
        [root, a, { keyId: forAlice.id, name: "for alice", reason }],
        [root, b, { keyId: forBob.id, name: "for bob", reason }],
      ],
    );
    // Written with the change that caused them: in the same request.
    const cause = await svc.admin.get("/api/audit", {
      params: { query: { targetId: minter.account.id, limit: 1 } },
    });
    assert(cause.ok);
    assertEquals(
      cause.data[0].action,
      {
        demoted: "user.role_changed",
        disabled: "user.disabled",
        deleted: "user.deleted",
      }[removal],
    );
    assertEquals(records[1].requestId, cause.data[0].requestId);
    assertEquals(records[2].requestId, cause.data[0].requestId);
  });
}

Deno.test("revoked for good: enabling or promoting the minter again brings no key back, nor does the recovery task making them admin", async () => {
  const svc = await service();
  const minter = await svc.userClient("admin");
  const viewer = await svc.userClient("viewer");
  const id = minter.account.id;

  const first = await createKey(svc, viewer.account.id, "a", minter.client);
  assert((await svc.admin.disableUser(id)).ok);
  assert((await svc.admin.enableUser(id)).ok);
  assertEquals(await meWith(svc, first.key), 401);

  // Logged in again after the disable ended the session.
  const again = svc.client();
  assert((await again.login(minter.account.username, minter.password)).ok);
  const second = await createKey(svc, viewer.account.id, "b", again);
  const demote = await svc.admin.patch("/api/users/{id}", {
    params: { path: { id } },
    body: { role: "viewer" },
  });
  assert(demote.ok);
  const promote = await svc.admin.patch("/api/users/{id}", {
    params: { path: { id } },
    body: { role: "admin" },
  });
  assert(promote.ok);
  assertEquals(await meWith(svc, second.key), 401);

  const third = await createKey(svc, viewer.account.id, "c", again);
  assertEquals(
    await svc.admin.patch("/api/users/{id}", {
      params: { path: { id } },
      body: { role: "viewer" },
    }).then((r) => r.status),
    200,
  );
  // The recovery task's reset to admin (deno task create-admin).
  const reset = await svc.store.users.upsertAdmin(
    {
      username: minter.account.username,
      name: minter.account.name,
      email: minter.account.email,
      passwordHash: "x",
    },
    Infinity,
  );
  assertEquals(reset, "reset");
  for (const k of [first, second, third]) {
    assertEquals(await meWith(svc, k.key), 401, k.name);
  }
  assertEquals(await listed(svc, viewer.account.id), []);
});

Deno.test("the recovery task resetting a minter who is an admin is no demotion: their keys for others keep working", async () => {
  const svc = await service();
  const minter = await svc.userClient("admin");
  const viewer = await svc.userClient("viewer");
  const key = await createKey(svc, viewer.account.id, "kept", minter.client);
  const reset = await svc.store.users.upsertAdmin(
    {
      username: minter.account.username,
      name: minter.account.name,
      email: minter.account.email,
      passwordHash: "x",
    },
    Infinity,
  );
  assertEquals(reset, "reset");
  assertEquals(await meWith(svc, key.key), 200);
});

Deno.test("an admin's own keys are not revoked by their removal: demoted they act as a viewer, disabled they are suspended until enabled", async () => {
  const svc = await service();
  const minter = await svc.userClient("admin");
  const id = minter.account.id;
  const own = await createKey(svc, id, "own", minter.client);
  const byRoot = await createKey(svc, id, "by root");

  assert((await svc.admin.disableUser(id)).ok);
  assertEquals(await keyClient(svc, own.key).me(), UNAUTHORISED);
  assert((await svc.admin.enableUser(id)).ok);
  for (const k of [own, byRoot]) {
    assertEquals(await meWith(svc, k.key), 200, k.name);
  }

  assert(
    (await svc.admin.patch("/api/users/{id}", {
      params: { path: { id } },
      body: { role: "viewer" },
    })).ok,
  );
  const me = await keyClient(svc, own.key).me();
  assert(me.ok);
  assertEquals(me.data.role, "viewer");
  assertEquals(await listed(svc, id), ["by root", "own"]);
  const records = await revokedRecords(svc, [own.id, byRoot.id]);
  assertEquals(records, []);
});

Deno.test("a deletion or demotion refused by If-Match (412) revokes nothing", async () => {
  const svc = await service();
  const minter = await svc.userClient("admin");
  const viewer = await svc.userClient("viewer");
  const key = await createKey(svc, viewer.account.id, "k", minter.client);
  const stale = `"u${minter.account.id}.1"`;
  const params = { path: { id: minter.account.id } };
  const precondition = {
    ok: false,
    status: 412,
    error: "Precondition failed",
  } as const;
  assertEquals(
    await svc.admin.delete("/api/users/{id}", {
      params,
      headers: { "if-match": stale },
    }),
    precondition,
  );
  assertEquals(
    await svc.admin.patch("/api/users/{id}", {
      params,
      body: { role: "viewer" },
      headers: { "if-match": stale },
    }),
    precondition,
  );
  assertEquals(await meWith(svc, key.key), 200);
  assertEquals(await revokedRecords(svc, [key.id]), []);
});

Deno.test("a minter's row deleted as a release without the revocation deletes it takes the keys they minted for others with it", async () => {
  const svc = await service();
  const minter = await svc.userClient("admin");
  const viewer = await svc.userClient("viewer");
  const key = await createKey(svc, viewer.account.id, "k", minter.client);
  const kept = await createKey(svc, viewer.account.id, "kept");
  await svc.sql`delete from users where id = ${minter.account.id}`;
  assertEquals(await meWith(svc, key.key), 401);
  assertEquals(await meWith(svc, kept.key), 200);
  assertEquals(await listed(svc, viewer.account.id), ["kept"]);
});

const ROUNDS = 15;
const MINTS = 3;

/**
 * Another admin removes the minter while the minter mints keys for a
 * viewer, all at once: every mint either is refused (401 or 403) or its
 * key is revoked with the removal; none is left working.
 */
async function raceMintsAgainst(removal: Removal) {
  const svc = await service();
  const viewer = await svc.userClient("viewer");
  for (let round = 0; round < ROUNDS; round++) {
    const minter = await svc.userClient("admin");
    const mint = (client: UserAdminClient, i: number) =>
      client.post("/api/users/{id}/keys", {
        params: { path: { id: viewer.account.id } },
        body: { name: `round ${round}.${i}` },
      });
    const [removed, ...mints] = await Promise.all([
      REMOVALS[removal](svc, minter.account.id),
      ...Array.from({ length: MINTS }, (_, i) => mint(minter.client, i)),
    ]);
    assert(removed.ok, `round ${round}: ${JSON.stringify(removed)}`);
    for (const m of mints) {
      if (m.ok) {
        assertEquals(
          await meWith(svc, m.data.key),
          401,
          `round ${round}: ${m.data.name} survived its minter`,
        );
      } else {
        assert(
          [401, 403].includes(m.status),
          `round ${round}: ${JSON.stringify(m)}`,
        );
      }
    }
    const [{ live }] = await svc.sql<{ live: number }[]>`
      select count(*)::int as live from api_keys
      where created_by = ${minter.account.id} and revoked_at is null`;
    assertEquals(live, 0, `round ${round}`);
  }
  assertEquals(await listed(svc, viewer.account.id), []);
}

for (const removal of Object.keys(REMOVALS) as Removal[]) {
  Deno.test(`keys minted by an admin while another admin has them ${removal} never survive (many rounds)`, () =>
    raceMintsAgainst(removal));
}
