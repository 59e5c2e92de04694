/**
 * Every audit action, for the pickers of the audit trail and of webhooks.
 * A Record over the client's type: an action the API adds fails the type
 * check here until it is listed.
 */
import type { AuditAction } from "./api.ts";

const LISTED: Record<AuditAction, true> = {
  "user.created": true,
  "user.updated": true,
  "user.role_changed": true,
  "user.password_reset": true,
  "user.password_changed": true,
  "user.deleted": true,
  "user.disabled": true,
  "user.enabled": true,
  "sessions.ended": true,
  "login.succeeded": true,
  "login.failed": true,
  "login.throttled": true,
  "login.refused": true,
  "logout": true,
  "admin.bootstrapped": true,
  "admin.recovered": true,
  "key.created": true,
  "key.revoked": true,
  "webhook.created": true,
  "webhook.deleted": true,
  "webhook.disabled": true,
  "webhook.enabled": true,
  "group.created": true,
  "group.updated": true,
  "group.deleted": true,
  "connection.created": true,
  "connection.updated": true,
  "connection.deleted": true,
  "scim.user_linked": true,
  "password.upgraded": true,
  "import.started": true,
  "import.finished": true,
  "users.exported": true,
  "mfa.enrolled": true,
  "mfa.removed": true,
  "mfa.reset": true,
  "mfa.recovery_codes": true,
  "login.second_factor_failed": true,
  "sso.linked": true,
  "sso.provider_created": true,
  "sso.provider_updated": true,
  "sso.provider_deleted": true,
  "role.created": true,
  "role.updated": true,
  "role.deleted": true,
  "assignment.created": true,
  "assignment.deleted": true,
  "group.members_changed": true,
};

export const ACTIONS = Object.keys(LISTED) as AuditAction[];

export const isAction = (s: string | null): s is AuditAction =>
  s !== null && Object.hasOwn(LISTED, s);
