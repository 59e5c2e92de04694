/**
 * Every audit action and its label, for the pickers of the audit trail and
 * of webhooks and the trail's rows. A Record over the client's type: an
 * action the API adds fails the type check here until it is labelled.
 */
import type { AuditAction } from "./api.ts";

/** Each action's label for people, in the console's words. */
export const LABELS: Record<AuditAction, string> = {
  "user.created": "User created",
  "user.updated": "Profile changed",
  "user.role_changed": "Role changed",
  "user.password_reset": "Password reset",
  "user.password_changed": "Own password changed",
  "user.deleted": "User deleted",
  "user.disabled": "User disabled",
  "user.enabled": "User enabled",
  "sessions.ended": "Sessions ended",
  "login.succeeded": "Signed in",
  "login.failed": "Sign-in failed",
  "login.throttled": "Sign-in throttled",
  "login.refused": "Sign-in refused",
  logout: "Signed out",
  "admin.bootstrapped": "First admin created",
  "admin.recovered": "Admin recovered",
  "key.created": "API key created",
  "key.revoked": "API key revoked",
  "webhook.created": "Webhook created",
  "webhook.deleted": "Webhook deleted",
  "webhook.disabled": "Webhook disabled",
  "webhook.enabled": "Webhook enabled",
  "group.created": "Group created",
  "group.updated": "Group changed",
  "group.deleted": "Group deleted",
  "connection.created": "Provisioning connection created",
  "connection.updated": "Provisioning connection changed",
  "connection.deleted": "Provisioning connection deleted",
  "scim.user_linked": "User taken over by provisioning",
  "password.upgraded": "Password hash upgraded",
  "import.started": "Import started",
  "import.finished": "Import finished",
  "users.exported": "Users exported",
  "mfa.enrolled": "Second factor added",
  "mfa.removed": "Second factor removed",
  "mfa.reset": "Second factors reset",
  "mfa.recovery_codes": "New recovery codes",
  "login.second_factor_failed": "Wrong second factor",
  "sso.linked": "Linked to an identity provider",
  "sso.provider_created": "Identity provider added",
  "sso.provider_updated": "Identity provider changed",
  "sso.provider_deleted": "Identity provider deleted",
  "role.created": "Role defined",
  "role.updated": "Role definition changed",
  "role.deleted": "Role definition deleted",
  "assignment.created": "Role assigned",
  "assignment.deleted": "Role assignment removed",
  "group.members_changed": "Group members changed",
};

export const ACTIONS = Object.keys(LABELS) as AuditAction[];

export const isAction = (s: string | null): s is AuditAction =>
  s !== null && Object.hasOwn(LABELS, s);

/** An action's label; the id itself for one this console does not know. */
export const actionLabel = (action: string): string =>
  isAction(action) ? LABELS[action] : action;
