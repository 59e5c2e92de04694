/**
 * Every action the audit trail records, in one place: the API's `action`
 * filter, the OpenAPI enum and the record builders all use this list.
 */
export const AUDIT_ACTIONS = [
  "user.created",
  "user.role_changed",
  "user.password_reset",
  "user.deleted",
  "login.succeeded",
  "login.failed",
  "login.throttled",
  "login.refused",
  "logout",
  "admin.bootstrapped",
  "admin.recovered",
  "user.disabled",
  "user.enabled",
  "sessions.ended",
  "key.created",
  "key.revoked",
  "webhook.created",
  "webhook.deleted",
  "webhook.disabled",
  "webhook.enabled",
  "user.updated",
  "group.created",
  "group.updated",
  "group.deleted",
  "connection.created",
  "connection.updated",
  "connection.deleted",
  "password.upgraded",
  "import.started",
  "import.finished",
  "users.exported",
  "mfa.enrolled",
  "mfa.removed",
  "mfa.reset",
  "mfa.recovery_codes",
  "login.second_factor_failed",
] as const;

export type AuditAction = (typeof AUDIT_ACTIONS)[number];
