import type { AuditAction } from "./actions.ts";
import type { AuditParty, Via } from "./chain.ts";

/**
 * Where a record came from: the request (none for the service itself and
 * the recovery task) and the door it came through (`via`), as the door that
 * made the context says.
 */
export interface AuditContext {
  requestId: string | null;
  clientAddress: string | null;
  via: Via | null;
}

/** A record as a writer hands it to `recordAudit`: the store adds id, time and hashes. */
export interface AuditEvent extends AuditContext {
  action: AuditAction;
  actor: AuditParty | null;
  target: AuditParty | null;
  details: Record<string, unknown>;
}

/** The context of what the service or a command-line task does by itself. */
export const NO_REQUEST: AuditContext = {
  requestId: null,
  clientAddress: null,
  via: null,
};

/**
 * Only id and username, whatever row is passed: a record can never carry a
 * password hash or any other column by accident.
 */
const party = (u: AuditParty): AuditParty => ({
  id: u.id,
  username: u.username,
});

/** The actor, and the key their request came with, if any. */
const actorParty = (u: AuditParty): AuditParty =>
  u.keyId === undefined ? party(u) : { ...party(u), keyId: u.keyId };

/** The one way a record is built: what happened, and the context's request and door. */
export const event = (
  action: AuditAction,
  actor: AuditParty | null,
  target: AuditParty | null,
  details: Record<string, unknown>,
  context: AuditContext,
): AuditEvent => ({
  action,
  actor: actor && actorParty(actor),
  target: target && party(target),
  details,
  requestId: context.requestId,
  clientAddress: context.clientAddress,
  via: context.via,
});
