/**
 * The permissions of the admin API, in one place: each route declares the
 * one it needs (guards.ts), roles hold sets of them (src/db/roles.ts), keys
 * carry a subset of their minter's (src/db/api-keys.ts). The built-in
 * `admin` role holds every one over every user, `viewer` none.
 *
 * Imports nothing of the service but the account's role, so every layer
 * (the store's resolution, the guards, the tests' property) may use it.
 */
import type { Role } from "../users/user.ts";

export const PERMISSIONS = [
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
] as const;

export type Permission = (typeof PERMISSIONS)[number];

const KNOWN: ReadonlySet<string> = new Set(PERMISSIONS);

export const isPermission = (name: string): name is Permission =>
  KNOWN.has(name);

/**
 * The permissions an assignment limited to a group's members grants: those
 * that act on users. The others (making users, imports, webhooks, SCIM,
 * identity providers, roles) act on no one user, and only an assignment
 * over everyone grants them. grants.ts reads this list.
 */
export const REACHABLE = [
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
] as const satisfies readonly Permission[];

/**
 * Over whom a permission is held: every user, or the members of these
 * groups (ascending, each once, never none: a permission over no one is
 * not held).
 */
export type Reach = "all" | { readonly groupIds: number[] };

const ALL: Reach = "all";

const sortedIds = (ids: Iterable<number>) =>
  [...new Set(ids)].sort((a, b) => a - b);

/** Over whom either reaches. */
export const reachUnion = (a: Reach, b: Reach): Reach =>
  a === "all" || b === "all"
    ? ALL
    : { groupIds: sortedIds([...a.groupIds, ...b.groupIds]) };

/** Over whom both reach; undefined for no one. */
export const reachIntersection = (a: Reach, b: Reach): Reach | undefined => {
  if (a === "all") return b;
  if (b === "all") return a;
  const ids = a.groupIds.filter((g) => b.groupIds.includes(g));
  return ids.length === 0 ? undefined : { groupIds: ids };
};

/** Whether `wide` reaches everyone `narrow` does. */
export const reachCovers = (wide: Reach, narrow: Reach) =>
  wide === "all" ||
  (narrow !== "all" && narrow.groupIds.every((g) => wide.groupIds.includes(g)));

/** Whether `reach` reaches a user who is a member of `groupIds`. */
export const reaches = (reach: Reach, groupIds: readonly number[]) =>
  reach === "all" || reach.groupIds.some((g) => groupIds.includes(g));

/** The reach of a limited grant's group: null, everyone. */
export const reachOfGroup = (groupId: number | null | undefined): Reach =>
  groupId == null ? ALL : { groupIds: [groupId] };

/**
 * What a caller may do, resolved on each request from the database (no
 * cache outlives a change): each permission held and its reach, and
 * whether the caller is an admin acting with every permission (a session,
 * or a key without a narrower list), which alone may make admins.
 */
export interface Access {
  readonly held: ReadonlyMap<Permission, Reach>;
  readonly admin: boolean;
}

/** What a need names: a permission, or `admin` (an admin acting with every permission). */
export type Need = Permission | "admin";

/** Every permission, over every user. */
const EVERY: ReadonlyMap<Permission, Reach> = new Map(
  PERMISSIONS.map((p) => [p, "all"]),
);

const ADMIN: Access = { held: EVERY, admin: true };
const NOTHING: Access = { held: new Map(), admin: false };

/** The grants of roles, as the store reads them: null for an admin (every one). */
export type Granted = readonly string[] | null;

/**
 * The grants' entries read: `perm` over everyone, `perm@<groupId>` over
 * that group's members (grants.ts), each permission's reaches joined.
 * Unknown names are none.
 */
const grantsOf = (granted: Granted): Map<Permission, Reach> => {
  if (granted === null) return new Map(EVERY);
  const held = new Map<Permission, Reach>();
  for (const entry of granted) {
    const at = entry.indexOf("@");
    const name = at < 0 ? entry : entry.slice(0, at);
    if (!isPermission(name)) continue;
    const reach = at < 0 ? ALL : { groupIds: [Number(entry.slice(at + 1))] };
    const had = held.get(name);
    held.set(name, had === undefined ? reach : reachUnion(had, reach));
  }
  return held;
};

/**
 * A person's access: their role's, and what the roles assigned to them
 * grant, each permission over its reach. With a key, narrowed to the key's
 * list (null: all of them; an entry `perm@<groupId>` limits it to that
 * group) and to what its minter holds now, permission by permission and
 * reach by reach (the intersection: a key never exceeds its minter, even
 * after the minter loses something).
 */
export function accessOf(
  role: Role,
  granted: Granted,
  key?: { permissions: Granted; minter: Granted },
): Access {
  // The common cases share one value: no map is built on their requests.
  if (!key || (key.permissions === null && key.minter === null)) {
    if (role === "admin") return ADMIN;
    if (granted !== null && granted.length === 0) return NOTHING;
  }
  const held = grantsOf(role === "admin" ? null : granted);
  if (key) {
    for (const narrower of [key.permissions, key.minter]) {
      if (narrower === null) continue;
      const keep = grantsOf(narrower);
      for (const [p, reach] of held) {
        const within = keep.get(p);
        const both = within && reachIntersection(reach, within);
        if (both) held.set(p, both);
        else held.delete(p);
      }
    }
  }
  return {
    held,
    admin: role === "admin" && held.size === PERMISSIONS.length &&
      [...held.values()].every((r) => r === "all"),
  };
}

/** Whether `access` meets every one of `needs`. */
export const meets = (access: Access, needs: readonly Need[]) =>
  needs.every((n) => n === "admin" ? access.admin : access.held.has(n));

/** Whether `access` holds everything `other` holds, over at least its reach. */
export const covers = (access: Access, other: Access) =>
  (access.admin || !other.admin) &&
  [...other.held].every(([p, reach]) => {
    const mine = access.held.get(p);
    return mine !== undefined && reachCovers(mine, reach);
  });

/**
 * Whether `access` holds each of `permissions` over `over`: over anyone
 * (undefined: held at all), over at least a reach, or over a user who is a
 * member of `memberOf` (and of no other group).
 */
export const holdsOver = (
  access: Access,
  permissions: readonly string[],
  over?: Reach | { memberOf: readonly number[] },
) =>
  permissions.every((p) => {
    const mine = access.held.get(p as Permission);
    if (mine === undefined) return false;
    if (over === undefined) return true;
    if (over !== "all" && "memberOf" in over) {
      return reaches(mine, over.memberOf);
    }
    return reachCovers(mine, over);
  });

/**
 * What a role's permissions grant through an assignment limited to a
 * group (`reachGroupId`), or over everyone (null): a limited one only the
 * `REACHABLE` ones.
 */
export const grantedBy = (
  permissions: readonly string[],
  reachGroupId: number | null | undefined,
): string[] =>
  reachGroupId == null
    ? [...permissions]
    : permissions.filter((p) => (REACHABLE as readonly string[]).includes(p));

/**
 * How `GET /api/auth/permissions` states the reach: one for all the
 * permissions held when they share it (`"all"` when none is held), else
 * `"mixed"` and each one's.
 */
export const reachShown = (access: Access):
  | { reach: Reach }
  | { reach: "mixed"; reaches: Record<string, Reach> } => {
  const all = [...access.held.values()];
  const first = all[0] ?? ALL;
  const same = (r: Reach) => reachCovers(r, first) && reachCovers(first, r);
  if (all.every(same)) return { reach: first };
  return {
    reach: "mixed",
    reaches: Object.fromEntries(
      heldList(access).map((p) => [p, access.held.get(p)!]),
    ),
  };
};

/** The permissions `access` holds, in the catalogue's order. */
export const heldList = (access: Access): Permission[] =>
  PERMISSIONS.filter((p) => access.held.has(p));

/**
 * Over whom `access` holds `permission`: what a read by that permission
 * shows (a caller the route let in holds it; one who does not reaches
 * no one a group could name, read as an empty list of groups).
 */
export const reachOf = (access: Access, permission: Permission): Reach =>
  access.held.get(permission) ?? { groupIds: [] };

/**
 * Over whom `access` holds any permission: whom a route that several
 * permissions open (or a person's own) may find before its write decides
 * by the one the request needs.
 */
export const anyReach = (access: Access): Reach =>
  [...access.held.values()].reduce<Reach>(
    (all, r) => reachUnion(all, r),
    { groupIds: [] },
  );
