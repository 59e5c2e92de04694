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
 * Over whom a permission is held. Today every grant reaches every user;
 * an assignment limited to a group's members will hold `{groupIds}`.
 */
export type Reach = "all";

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

const grantsOf = (granted: Granted): Map<Permission, Reach> =>
  granted === null
    ? new Map(EVERY)
    : new Map(granted.filter(isPermission).map((p) => [p, "all"]));

/**
 * A person's access: their role's, and what the roles assigned to them
 * grant. With a key, narrowed to the key's list (null: all of them) and
 * to what its minter holds now (a key never exceeds its minter, even after
 * the minter loses something).
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
      const keep = new Set(narrower);
      for (const p of held.keys()) if (!keep.has(p)) held.delete(p);
    }
  }
  return {
    held,
    admin: role === "admin" && held.size === PERMISSIONS.length,
  };
}

/** Whether `access` meets every one of `needs`. */
export const meets = (access: Access, needs: readonly Need[]) =>
  needs.every((n) => n === "admin" ? access.admin : access.held.has(n));

/** Whether `access` holds everything `other` holds, over at least its reach. */
export const covers = (access: Access, other: Access) =>
  (access.admin || !other.admin) &&
  [...other.held.keys()].every((p) => access.held.has(p));

/** The permissions `access` holds, in the catalogue's order. */
export const heldList = (access: Access): Permission[] =>
  PERMISSIONS.filter((p) => access.held.has(p));
