/**
 * No escalation, as a property: an admin gives a few people roles, then
 * those people (never an admin) act at random: they create, change and
 * delete roles, give and end assignments, make groups, give them roles
 * and add and remove their members, mint keys (some used for the
 * next actions), try to make admins and to reset an admin's password. At
 * the end nobody holds a permission an admin did not give them: each
 * person holds at most what the admin gave them, plus what people who
 * hold `roles:manage` held (the only way a permission passes on), and is
 * still a viewer; every key holds at most its owner's; the admin's
 * password is unchanged. With reach: some gifts are limited to a group the
 * admin made, and people assign over groups (theirs, the admin's, or
 * everyone); each permission a person holds is held over at most the
 * reach it was given (or could pass on) over: everyone, or those groups.
 *
 * Seeded: the seed is printed, and DELEGATION_SEED=<seed> runs the same
 * sequences again.
 */
import fc from "fast-check";
import type { UserAdminClient } from "@user-admin/client";
import { assert } from "./support/assert.ts";
import { keyClient } from "./support/api-keys.ts";
import { sharedService, type TestService } from "./support/service.ts";

const SEED = Number(Deno.env.get("DELEGATION_SEED") ?? Date.now() % 2 ** 31);
console.log(
  `delegation seed ${SEED} (DELEGATION_SEED=${SEED} repeats this run)`,
);

const service = sharedService({}, { bcryptCost: 4 });

/** The catalogue, written out: what people may ask for. */
const CATALOGUE = [
  "users:read",
  "users:create",
  "users:update",
  "users:password",
  "users:disable",
  "users:sessions",
  "users:factors",
  "users:delete",
  "users:export",
  "users:import",
  "audit:read",
  "webhooks:manage",
  "scim:manage",
  "sso:manage",
  "roles:manage",
  "keys:manage",
];

/** What the admin's roles are made of: never the whole catalogue. */
const GIVEN = [
  "users:read",
  "users:password",
  "users:sessions",
  "users:update",
  "audit:read",
  "keys:manage",
];

const PEOPLE = 4;

type Action =
  | { kind: "createRole"; actor: number; key: boolean; perms: string[] }
  | {
    kind: "patchRole";
    actor: number;
    key: boolean;
    role: number;
    perms: string[];
  }
  | { kind: "deleteRole"; actor: number; key: boolean; role: number }
  | {
    kind: "assign";
    actor: number;
    key: boolean;
    role: number;
    target: number;
    /** The reach: none (everyone), the admin's group (0), or one the people made (1 + index). */
    reach: number | null;
  }
  | { kind: "unassign"; actor: number; key: boolean; which: number }
  | { kind: "createGroup"; actor: number; key: boolean }
  | {
    kind: "assignGroup";
    actor: number;
    key: boolean;
    role: number;
    group: number;
    reach: number | null;
  }
  | {
    kind: "join" | "leave";
    actor: number;
    key: boolean;
    group: number;
    target: number;
  }
  | { kind: "makeAdmin"; actor: number; key: boolean; target: number }
  | { kind: "resetAdmin"; actor: number; key: boolean }
  | {
    kind: "mintKey";
    actor: number;
    key: boolean;
    target: number;
    perms: string[] | null;
  };

const perms = fc.subarray(CATALOGUE, { minLength: 0, maxLength: 5 });
const actor = fc.nat({ max: PEOPLE - 1 });
/** A target: one of the people, or (PEOPLE) the admin. */
const target = fc.nat({ max: PEOPLE });
const reach = fc.option(fc.nat({ max: 3 }), { nil: null, freq: 2 });
const action: fc.Arbitrary<Action> = fc.oneof(
  fc.record({
    kind: fc.constant("createRole" as const),
    actor,
    key: fc.boolean(),
    perms,
  }),
  fc.record({
    kind: fc.constant("patchRole" as const),
    actor,
    key: fc.boolean(),
    role: fc.nat(),
    perms,
  }),
  fc.record({
    kind: fc.constant("deleteRole" as const),
    actor,
    key: fc.boolean(),
    role: fc.nat(),
  }),
  fc.record({
    kind: fc.constant("assign" as const),
    actor,
    key: fc.boolean(),
    role: fc.nat(),
    target,
    reach,
  }),
  fc.record({
    kind: fc.constant("assign" as const),
    actor,
    key: fc.boolean(),
    role: fc.nat(),
    target,
    reach,
  }),
  fc.record({
    kind: fc.constant("unassign" as const),
    actor,
    key: fc.boolean(),
    which: fc.nat(),
  }),
  fc.record({
    kind: fc.constant("createGroup" as const),
    actor,
    key: fc.boolean(),
  }),
  fc.record({
    kind: fc.constant("assignGroup" as const),
    actor,
    key: fc.boolean(),
    role: fc.nat(),
    group: fc.nat(),
    reach,
  }),
  fc.record({
    kind: fc.constantFrom("join" as const, "leave" as const),
    actor,
    key: fc.boolean(),
    group: fc.nat(),
    target,
  }),
  fc.record({
    kind: fc.constant("makeAdmin" as const),
    actor,
    key: fc.boolean(),
    target,
  }),
  fc.record({
    kind: fc.constant("resetAdmin" as const),
    actor,
    key: fc.boolean(),
  }),
  fc.record({
    kind: fc.constant("mintKey" as const),
    actor,
    key: fc.boolean(),
    target,
    perms: fc.option(perms, { nil: null }),
  }),
);

/** The admin's roles: one always carries `roles:manage`, so permissions can pass on. */
const setup = fc.record({
  roles: fc.array(fc.subarray(GIVEN, { minLength: 1 }), {
    minLength: 2,
    maxLength: 3,
  }),
  /** For each person, the admin's roles they get (indexes). */
  given: fc.array(fc.subarray([0, 1, 2]), {
    minLength: PEOPLE,
    maxLength: PEOPLE,
  }),
  manager: fc.nat({ max: PEOPLE - 1 }),
  /** For each person, whether the admin's roles they get are limited to the admin's group. */
  limited: fc.array(fc.boolean(), { minLength: PEOPLE, maxLength: PEOPLE }),
});

/** What a limited assignment grants (docs/delegation.md). */
const REACHABLE = [
  "users:read",
  "users:update",
  "users:password",
  "users:disable",
  "users:sessions",
  "users:factors",
  "users:delete",
  "users:export",
  "audit:read",
  "keys:manage",
];

/** A reach in the model: everyone, or these groups' members. */
type Reach = "all" | Set<number>;
const widest = (a: Reach | undefined, b: Reach): Reach =>
  a === undefined
    ? (b === "all" ? "all" : new Set(b))
    : a === "all" || b === "all"
    ? "all"
    : new Set([...a, ...b]);
const within = (r: Reach, bound: Reach | undefined) =>
  bound !== undefined &&
  (bound === "all" || (r !== "all" && [...r].every((g) => bound.has(g))));

/** `perm` or `perm@<groupId>` entries (as the service reads grants) as a map. */
function reachesOf(entries: string[]): Map<string, Reach> {
  const out = new Map<string, Reach>();
  for (const e of entries) {
    const [p, g] = e.split("@");
    out.set(p, widest(out.get(p), g === undefined ? "all" : new Set([+g])));
  }
  return out;
}

let run = 0;

async function play(
  svc: TestService,
  plan: {
    roles: string[][];
    given: number[][];
    manager: number;
    limited: boolean[];
  },
  actions: Action[],
) {
  run++;
  const people: { id: number; client: UserAdminClient }[] = [];
  for (let i = 0; i < PEOPLE; i++) {
    const made = await svc.userClient("viewer", {
      username: `p${run}-${i}-${SEED}`,
    });
    people.push({ id: made.account.id, client: made.client });
  }
  const adminId = svc.adminAccount.id;
  const [{ passwordVersion }] = await svc.sql<{ passwordVersion: number }[]>`
    select password_version as "passwordVersion" from users
    where id = ${adminId}`;

  // The admin's gifts: roles of GIVEN, and `roles:manage` for one person.
  const roleIds: number[] = [];
  const adminRoles = [...plan.roles, ["roles:manage", "users:read"]];
  for (const [i, p] of adminRoles.entries()) {
    const made = await svc.admin.post("/api/roles", {
      body: { name: `r${run}-${i}-${SEED}`, permissions: p },
    });
    assert(made.ok, JSON.stringify(made));
    roleIds.push(made.data.id);
  }
  // The admin's group, of the first two people: what limited gifts reach.
  const region = await svc.admin.post("/api/groups", {
    body: { displayName: `region${run}-${SEED}` },
  });
  assert(region.ok, JSON.stringify(region));
  const regionId = region.data.id;
  assert(
    (await svc.admin.post("/api/groups/{id}/members", {
      params: { path: { id: regionId } },
      body: { userIds: [people[0].id, people[1].id] },
    })).ok,
  );
  const gifts = new Map<number, Map<string, Reach>>(
    people.map((p) => [p.id, new Map()]),
  );
  const give = async (roleIndex: number, person: number, limited: boolean) => {
    const given = await svc.admin.post("/api/assignments", {
      body: {
        roleId: roleIds[roleIndex],
        userId: people[person].id,
        ...limited && { reachGroupId: regionId },
      },
    });
    if (given.ok) {
      const gift = gifts.get(people[person].id)!;
      for (const p of adminRoles[roleIndex]) {
        if (limited && !REACHABLE.includes(p)) continue;
        gift.set(p, widest(gift.get(p), limited ? new Set([regionId]) : "all"));
      }
    }
  };
  for (const [person, indexes] of plan.given.entries()) {
    for (const r of indexes) {
      if (r < plan.roles.length) await give(r, person, plan.limited[person]);
    }
  }
  await give(adminRoles.length - 1, plan.manager, false);

  /** Keys each person minted for themselves, and every key minted. */
  const ownKeys = new Map<number, string>();
  const keys: { key: string; ownerId: number }[] = [];
  const ids = [...people.map((p) => p.id), adminId];
  /** The groups the people made. */
  const groupIds: number[] = [];
  /** The reach an action names: none, the admin's group, or one made. */
  const reachOf = (r: number | null) =>
    r === null
      ? {}
      : r === 0 || groupIds.length === 0
      ? { reachGroupId: regionId }
      : { reachGroupId: groupIds[(r - 1) % groupIds.length] };
  for (const a of actions) {
    const me = people[a.actor];
    const c = a.key && ownKeys.has(a.actor)
      ? keyClient(svc, ownKeys.get(a.actor)!)
      : me.client;
    switch (a.kind) {
      case "createRole": {
        const made = await c.post("/api/roles", {
          body: {
            name: `x${run}-${crypto.randomUUID()}`,
            permissions: a.perms,
          },
        });
        if (made.ok) roleIds.push(made.data.id);
        break;
      }
      case "patchRole":
        await c.patch("/api/roles/{id}", {
          params: { path: { id: roleIds[a.role % roleIds.length] } },
          body: { permissions: a.perms },
        });
        break;
      case "deleteRole":
        await c.delete("/api/roles/{id}", {
          params: { path: { id: roleIds[a.role % roleIds.length] } },
        });
        break;
      case "assign":
        await c.post("/api/assignments", {
          body: {
            roleId: roleIds[a.role % roleIds.length],
            userId: ids[a.target],
            ...reachOf(a.reach),
          },
        });
        break;
      case "createGroup": {
        const made = await c.post("/api/groups", {
          body: { displayName: `g${run}-${crypto.randomUUID()}` },
        });
        if (made.ok) groupIds.push(made.data.id);
        break;
      }
      case "assignGroup":
        if (groupIds.length === 0) break;
        await c.post("/api/assignments", {
          body: {
            roleId: roleIds[a.role % roleIds.length],
            groupId: groupIds[a.group % groupIds.length],
            ...reachOf(a.reach),
          },
        });
        break;
      case "join":
      case "leave": {
        if (groupIds.length === 0) break;
        const members = {
          params: { path: { id: groupIds[a.group % groupIds.length] } },
          body: { userIds: [ids[a.target]] },
        };
        await (a.kind === "join"
          ? c.post("/api/groups/{id}/members", members)
          : c.delete("/api/groups/{id}/members", members));
        break;
      }
      case "unassign": {
        const all = await svc.sql<{ id: number }[]>`
          select id from role_assignments where user_id in ${svc.sql(ids)}
            or group_id = any(${groupIds}::int[])
          order by id`;
        if (all.length === 0) break;
        await c.delete("/api/assignments/{id}", {
          params: { path: { id: all[a.which % all.length].id } },
        });
        break;
      }
      case "makeAdmin":
        await c.patch("/api/users/{id}", {
          params: { path: { id: ids[a.target] } },
          body: { role: "admin" },
        });
        break;
      case "resetAdmin":
        await c.patch("/api/users/{id}", {
          params: { path: { id: adminId } },
          body: { password: "taken-over-password" },
        });
        break;
      case "mintKey": {
        const minted = await c.post("/api/users/{id}/keys", {
          params: { path: { id: ids[a.target] } },
          body: { name: "k", ...a.perms && { permissions: a.perms } },
        });
        if (minted.ok) {
          keys.push({ key: minted.data.key, ownerId: ids[a.target] });
          if (ids[a.target] === me.id) ownKeys.set(a.actor, minted.data.key);
        }
        break;
      }
    }
  }

  // What each person holds now, read from the tables themselves: their
  // own assignments and their groups', each over its reach (a limited one
  // grants only the permissions that act on users).
  const rows = await svc.sql<
    { id: number; role: string; held: string[]; version: number }[]
  >`
    select u.id, u.role, u.password_version as version, array(
      select distinct case when a.reach_group_id is null then p
          else p || '@' || a.reach_group_id end
      from role_assignments a
        join roles r on r.id = a.role_id cross join unnest(r.permissions) p
      where (a.user_id = u.id or a.group_id in (
          select m.group_id from scim_members m where m.user_id = u.id))
        and (a.reach_group_id is null or p = any(${REACHABLE}::text[]))
    ) as held
    from users u where u.id in ${svc.sql(ids)}`;
  const held = new Map(rows.map((r) => [r.id, reachesOf(r.held)]));
  // What may have passed on: everything a holder of roles:manage could
  // have held, over the reach they could hold it, grown until nothing
  // changes.
  const passed = new Map<string, Reach>();
  const join = (into: Map<string, Reach>, from: Map<string, Reach>) => {
    let grown = false;
    for (const [p, r] of from) {
      const before = into.get(p);
      if (!within(r, before)) {
        into.set(p, widest(before, r));
        grown = true;
      }
    }
    return grown;
  };
  for (let grown = true; grown;) {
    grown = false;
    for (const gift of gifts.values()) {
      const could = new Map(gift);
      join(could, passed);
      if (could.get("roles:manage") !== "all") continue;
      if (join(passed, could)) grown = true;
    }
  }
  const bound = (id: number) => {
    const b = new Map(gifts.get(id)!);
    join(b, passed);
    return b;
  };
  for (const r of rows) {
    if (r.id === adminId) {
      assert(
        r.role === "admin" && r.version === passwordVersion,
        "the admin was changed",
      );
      continue;
    }
    assert(r.role === "viewer", `person ${r.id} was made an admin`);
    const limit = bound(r.id);
    const beyond = [...held.get(r.id)!].filter(([p, reach]) =>
      !within(reach, limit.get(p))
    );
    assert(
      beyond.length === 0,
      `person ${r.id} holds ${
        beyond.map(([p, reach]) =>
          `${p} over ${reach === "all" ? "everyone" : [...reach]}`
        ).join(", ")
      }, which no admin gave them`,
    );
  }
  for (const { key, ownerId } of keys) {
    const answer = await keyClient(svc, key).get("/api/auth/permissions");
    if (!answer.ok) continue; // revoked with its minter, or its owner gone
    const owner = ownerId === adminId ? undefined : held.get(ownerId)!;
    const { reach, reaches } = answer.data as {
      reach: "all" | "mixed" | { groupIds: number[] };
      reaches?: Record<string, "all" | { groupIds: number[] }>;
    };
    const keyReach = (p: string): Reach => {
      const r = reach === "mixed" ? reaches![p] : reach;
      return r === "all" ? "all" : new Set(r.groupIds);
    };
    const beyond = answer.data.permissions.filter((p) =>
      owner !== undefined && !within(keyReach(p), owner.get(p))
    );
    assert(
      owner !== undefined && beyond.length === 0,
      `a key of ${ownerId} holds ${
        owner ? beyond.join(", ") : "an admin's permissions"
      }`,
    );
  }
}

Deno.test("no sequence of actions by non-admins ends with anyone holding a permission an admin did not give them", async () => {
  const svc = await service();
  await fc.assert(
    fc.asyncProperty(
      setup,
      fc.array(action, { minLength: 5, maxLength: 30 }),
      (plan, actions) => play(svc, plan, actions),
    ),
    { numRuns: 50, seed: SEED },
  );
});
