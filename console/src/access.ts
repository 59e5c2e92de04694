/**
 * What the signed-in person may do (`GET /api/auth/permissions`): the
 * console shows a page, a section or a button only to someone who holds
 * the permission its call needs, and the catalogue's names in words for
 * the role editor. Typed against the client: a permission the API adds
 * fails the type check here until it is described.
 */
import { createContext } from "preact";
import { useContext } from "preact/hooks";
import type { components } from "../../clients/mod.ts";

export type Permission =
  components["schemas"]["Permissions"]["permissions"][number];

/** Each permission in words, under the heading the role editor groups it by. */
const DESCRIBED: Record<Permission, { group: string; label: string }> = {
  "users:read": { group: "Accounts", label: "See users" },
  "users:create": { group: "Accounts", label: "Create users" },
  "users:update": {
    group: "Accounts",
    label: "Change names, e-mails and departments",
  },
  "users:password": { group: "Accounts", label: "Reset passwords" },
  "users:disable": { group: "Accounts", label: "Disable and enable users" },
  "users:delete": { group: "Accounts", label: "Delete users" },
  "users:sessions": {
    group: "Sign-in and security",
    label: "See and end sessions",
  },
  "users:factors": {
    group: "Sign-in and security",
    label: "Reset second factors",
  },
  "keys:manage": {
    group: "Sign-in and security",
    label: "Manage other people's API keys",
  },
  "users:export": { group: "Bulk", label: "Export users" },
  "users:import": { group: "Bulk", label: "Import users" },
  "audit:read": {
    group: "Audit and integrations",
    label: "Read the audit trail",
  },
  "webhooks:manage": {
    group: "Audit and integrations",
    label: "Manage webhooks",
  },
  "scim:manage": {
    group: "Audit and integrations",
    label: "Manage provisioning connections",
  },
  "sso:manage": {
    group: "Audit and integrations",
    label: "Manage sign-in providers",
  },
  "roles:manage": {
    group: "Delegation",
    label: "Manage roles, groups and who holds them",
  },
};

/** The permission's words, or the name itself for one the console does not know. */
export const labelOf = (p: string): string =>
  Object.hasOwn(DESCRIBED, p) ? DESCRIBED[p as Permission].label : p;

/** The catalogue grouped for checkboxes: `[heading, permissions]`, in a stable order. */
export const PERMISSION_GROUPS: [string, Permission[]][] = (() => {
  const groups = new Map<string, Permission[]>();
  for (const [p, { group }] of Object.entries(DESCRIBED)) {
    groups.set(group, [...groups.get(group) ?? [], p as Permission]);
  }
  return [...groups];
})();

/** What the signed-in person holds; empty until known. */
export const Held = createContext<ReadonlySet<string>>(new Set());

/** Whether the signed-in person holds `permission`. */
export function useCan(): (permission: Permission) => boolean {
  const held = useContext(Held);
  return (permission) => held.has(permission);
}

/** Whether the signed-in person holds any permission at all. */
export function useHoldsAny(): boolean {
  return useContext(Held).size > 0;
}
