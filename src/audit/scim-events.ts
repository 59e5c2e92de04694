import type { AuditParty } from "./chain.ts";
import { type AuditContext, type AuditEvent, event } from "./audit-event.ts";
import { auditEvents } from "./events.ts";

/** A provisioning connection as its records name it. */
export interface ConnectionRef {
  id: number;
  name: string;
}

/**
 * The record of a write a provisioning connection made (SCIM): no person
 * acted, the connection is named in the details, so the feed and webhooks
 * tell what an identity provider did.
 */
export const byConnection = (
  e: AuditEvent,
  connection: ConnectionRef,
): AuditEvent => ({
  ...e,
  actor: null,
  details: {
    ...e.details,
    connection: { id: connection.id, name: connection.name },
  },
});

/** The records only provisioning writes: `details` as listed, beside the connection. */
export const scimEvents = {
  /** The user's fields a SCIM write changed (`changed`: their SCIM names). */
  userUpdated: (
    target: AuditParty,
    changed: string[],
    connection: ConnectionRef,
    context: AuditContext,
  ) =>
    byConnection(
      auditEvents.userUpdated(null, target, changed, context),
      connection,
    ),

  /** The connection took over an existing user on its first write to them. */
  userLinked: (
    target: AuditParty,
    connection: ConnectionRef,
    context: AuditContext,
  ) =>
    byConnection(
      event("scim.user_linked", null, target, {}, context),
      connection,
    ),

  group: (
    action: "group.created" | "group.updated" | "group.deleted",
    group: { id: number; displayName: string },
    details: Record<string, unknown>,
    connection: ConnectionRef,
    context: AuditContext,
  ) =>
    byConnection(
      event(action, null, null, {
        groupId: group.id,
        displayName: group.displayName,
        ...details,
      }, context),
      connection,
    ),

  /** An admin created, changed or deleted a provisioning connection (never its token). */
  connection: (
    action: "connection.created" | "connection.updated" | "connection.deleted",
    actor: AuditParty,
    connection: ConnectionRef & { adminGroups: string[] },
    context: AuditContext,
  ) =>
    event(action, actor, null, {
      connectionId: connection.id,
      name: connection.name,
      adminGroups: connection.adminGroups,
    }, context),
};
