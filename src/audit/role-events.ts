import type { AuditParty } from "./chain.ts";
import { type AuditContext, event } from "./audit-event.ts";

/** A role as its records name it. */
export interface RoleRef {
  id: number;
  name: string;
}

/** An assignment as its records name it: the role, and (the record's target) the user given it. */
export interface AssignmentRef {
  id: number;
  role: RoleRef;
  /** A role given to a group: the group (the record has no target). */
  group?: GroupRef;
  /** Limited to the members of this group. */
  reachGroupId?: number;
}

/** A group as its records name it. */
export interface GroupRef {
  id: number;
  displayName: string;
}

/**
 * The records of delegated administration (src/db/roles.ts): a role's
 * `details` name it and its permissions; an assignment's its role, its
 * target the user given it.
 */
export const roleEvents = {
  role: (
    action: "role.created" | "role.updated" | "role.deleted",
    actor: AuditParty,
    role: RoleRef & { permissions: readonly string[] },
    context: AuditContext,
    changed?: readonly string[],
  ) =>
    event(action, actor, null, {
      roleId: role.id,
      name: role.name,
      permissions: role.permissions,
      ...changed && { changed },
    }, context),

  /**
   * `reason` `role deleted`: the deletion of its role ended it, in the
   * same transaction.
   */
  assignment: (
    action: "assignment.created" | "assignment.deleted",
    actor: AuditParty | null,
    user: AuditParty | null,
    assignment: AssignmentRef,
    context: AuditContext,
    reason?: typeof ROLE_DELETED | typeof GROUP_DELETED,
  ) =>
    event(action, actor, user, {
      assignmentId: assignment.id,
      roleId: assignment.role.id,
      role: assignment.role.name,
      ...assignment.group && {
        groupId: assignment.group.id,
        group: assignment.group.displayName,
      },
      ...assignment.reachGroupId !== undefined && {
        reachGroupId: assignment.reachGroupId,
      },
      ...reason && { reason },
    }, context),

  /**
   * A group made, changed or deleted through /api, or its members changed
   * (`added`, `removed`: user ids); SCIM's records of its own groups are
   * scimEvents.group.
   */
  group: (
    action:
      | "group.created"
      | "group.updated"
      | "group.deleted"
      | "group.members_changed",
    actor: AuditParty,
    group: GroupRef,
    details: Record<string, unknown>,
    context: AuditContext,
  ) =>
    event(action, actor, null, {
      groupId: group.id,
      displayName: group.displayName,
      ...details,
    }, context),
};

/** Why an assignment to a group ended without its own DELETE: the group was deleted. */
export const GROUP_DELETED = "group deleted";

/** Why an assignment ended without its own DELETE: its role was deleted. */
export const ROLE_DELETED = "role deleted";
