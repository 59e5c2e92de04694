import type { AuditParty } from "./chain.ts";
import { type AuditContext, event, NO_REQUEST } from "./audit-event.ts";
import { webhookEvents } from "./webhook-events.ts";
import type { GROUP_DELETED } from "./role-events.ts";

export {
  type AuditContext,
  type AuditEvent,
  NO_REQUEST,
} from "./audit-event.ts";
export { recordedUrl, type WebhookRef } from "./webhook-events.ts";
// Delegated administration's records are role-events.ts's, provisioning's
// scim-events.ts's.

/** An identity provider (docs/sso.md) as its records name it. */
export interface ProviderRef {
  id: number;
  name: string;
}

const providerOf = (p: ProviderRef) => ({ id: p.id, name: p.name });

/** A key as its records name it. */
interface KeyRef {
  id: number;
  name: string;
  /** The group whose members alone the key acts on, when limited to one. */
  reachGroupId?: number | null;
}

/** Why the service revoked a key by itself: its minter was deleted, disabled or demoted. */
export const MINTER_REMOVED = "minter removed";

/**
 * The records of each action, built from plain values. Details hold only
 * what is listed here: never a password, hash or token, and no attempted
 * username of a failed login for an unknown user.
 */
export const auditEvents = {
  userCreated: (
    actor: AuditParty | null,
    user: AuditParty & { role: string },
    context: AuditContext,
  ) => event("user.created", actor, user, { role: user.role }, context),

  roleChanged: (
    actor: AuditParty | null,
    target: AuditParty,
    from: string,
    to: string,
    context: AuditContext,
  ) => event("user.role_changed", actor, target, { from, to }, context),

  passwordReset: (
    actor: AuditParty | null,
    target: AuditParty,
    context: AuditContext,
  ) => event("user.password_reset", actor, target, {}, context),

  /** The account holder changed their own password, proving the current one. */
  passwordChanged: (
    actor: AuditParty,
    target: AuditParty,
    context: AuditContext,
  ) => event("user.password_changed", actor, target, {}, context),

  userDeleted: (
    actor: AuditParty | null,
    target: AuditParty,
    context: AuditContext,
  ) => event("user.deleted", actor, target, {}, context),

  /**
   * The user is both actor and target: they signed themselves in, with
   * these methods (`password`, then `totp`, `passkey` or `recovery_code`).
   */
  loginSucceeded: (
    user: AuditParty,
    methods: readonly string[],
    context: AuditContext,
    provider?: ProviderRef,
  ) =>
    event(
      "login.succeeded",
      user,
      user,
      provider ? { methods, provider: providerOf(provider) } : { methods },
      context,
    ),

  /**
   * A wrong second factor after a right password (`purpose` `login`), or
   * at a step-up: one per counted attempt, so at most the throttle's limit
   * per user and window.
   */
  secondFactorFailed: (
    user: AuditParty,
    purpose: "login" | "step_up",
    context: AuditContext,
  ) => event("login.second_factor_failed", null, user, { purpose }, context),

  /** The user enrolled a factor for themselves (`totp` or `passkey`). */
  mfaEnrolled: (user: AuditParty, method: string, context: AuditContext) =>
    event("mfa.enrolled", user, user, { method }, context),

  /** The user removed one of their factors. */
  mfaRemoved: (user: AuditParty, method: string, context: AuditContext) =>
    event("mfa.removed", user, user, { method }, context),

  /** An admin (or the recovery task: no actor) removed every factor of the user. */
  mfaReset: (
    actor: AuditParty | null,
    target: AuditParty,
    context: AuditContext,
  ) => event("mfa.reset", actor, target, {}, context),

  /** The user has a new set of recovery codes (the old ones no longer work). */
  mfaRecoveryCodes: (user: AuditParty, context: AuditContext) =>
    event("mfa.recovery_codes", user, user, {}, context),

  /** An imported hash of another scheme replaced by bcrypt at its first login. */
  passwordUpgraded: (
    user: AuditParty,
    from: string,
    context: AuditContext,
  ) => event("password.upgraded", user, user, { from }, context),

  /** The user's profile fields that changed (`changed`: their names), whichever door changed them. */
  userUpdated: (
    actor: AuditParty | null,
    user: AuditParty,
    changed: string[],
    context: AuditContext,
  ) => event("user.updated", actor, user, { changed }, context),

  importStarted: (
    actor: AuditParty,
    details: {
      importId: number;
      total: number;
      dryRun: boolean;
      onConflict: string;
    },
    context: AuditContext,
  ) => event("import.started", actor, null, details, context),

  importFinished: (
    actor: AuditParty,
    details: {
      importId: number;
      status: string;
      counts: Record<string, number>;
    },
    context: AuditContext,
  ) => event("import.finished", actor, null, details, context),

  usersExported: (
    actor: AuditParty,
    details: { count: number; passwordHashes: boolean },
    context: AuditContext,
  ) => event("users.exported", actor, null, details, context),

  /** `user` undefined for an unknown username, whose attempted name is not kept. */
  loginFailed: (user: AuditParty | undefined, context: AuditContext) =>
    event(
      "login.failed",
      null,
      user ?? null,
      { reason: user ? "wrong_password" : "unknown_user" },
      context,
    ),

  /** `user` undefined for an unknown username, whose attempted name is not kept. */
  loginThrottled: (
    user: AuditParty | undefined,
    retryAfter: number,
    context: AuditContext,
  ) => event("login.throttled", null, user ?? null, { retryAfter }, context),

  /** The right password of a disabled user: no session, and no failed attempt either. */
  loginRefused: (
    user: AuditParty,
    context: AuditContext,
    provider?: ProviderRef,
    reason: "disabled" | "identity_provider_only" = "disabled",
  ) =>
    event(
      "login.refused",
      null,
      user,
      provider ? { reason, provider: providerOf(provider) } : { reason },
      context,
    ),

  /**
   * A sign-in through an identity provider that ended without a session
   * before an account was decided (or for the account it found): why, in
   * words of docs/sso.md, and which provider.
   */
  ssoFailed: (
    user: AuditParty | null,
    reason: string,
    provider: ProviderRef,
    context: AuditContext,
  ) =>
    event(
      "login.failed",
      null,
      user,
      { reason, provider: providerOf(provider) },
      context,
    ),

  /**
   * A provider's subject now signs in to this account, found by `by`:
   * the SCIM connection's `externalId`, a verified e-mail, or made for it.
   */
  ssoLinked: (
    user: AuditParty,
    provider: ProviderRef,
    by: "externalId" | "email" | "created",
    context: AuditContext,
  ) =>
    event(
      "sso.linked",
      null,
      user,
      { provider: providerOf(provider), by },
      context,
    ),

  ssoProvider: (
    action:
      | "sso.provider_created"
      | "sso.provider_updated"
      | "sso.provider_deleted",
    actor: AuditParty,
    provider: ProviderRef,
    context: AuditContext,
  ) => event(action, actor, null, { provider: providerOf(provider) }, context),

  /** An admin disabled the user (or changed the reason or end of a disable). */
  userDisabled: (
    actor: AuditParty | null,
    target: AuditParty,
    disable: { reason: string | null; until: string | null },
    context: AuditContext,
  ) =>
    event(
      "user.disabled",
      actor,
      target,
      { reason: disable.reason, until: disable.until },
      context,
    ),

  /**
   * An admin enabled the user, or (`expired`, no actor) a disable's `until`
   * passed, recorded by the sweep or the user's next login.
   */
  userEnabled: (
    actor: AuditParty | null,
    target: AuditParty,
    expired: boolean,
    context: AuditContext,
  ) =>
    event(
      "user.enabled",
      actor,
      target,
      expired ? { expired: true } : {},
      context,
    ),

  /** An admin, or the user themselves, ended `count` live sessions of the user. */
  sessionsEnded: (
    actor: AuditParty,
    target: AuditParty,
    count: number,
    context: AuditContext,
  ) => event("sessions.ended", actor, target, { count }, context),

  logout: (user: AuditParty, context: AuditContext) =>
    event("logout", user, user, {}, context),

  /** The first admin, created at startup from the environment or with a generated password. */
  adminBootstrapped: (
    user: AuditParty,
    source: "environment" | "generated",
  ) => event("admin.bootstrapped", null, user, { source }, NO_REQUEST),

  /** The recovery task (`deno task create-admin`) created or reset an admin. */
  adminRecovered: (user: AuditParty, outcome: "created" | "reset") =>
    event("admin.recovered", null, user, { outcome }, NO_REQUEST),

  /** An admin minted a key for its owner (themselves or another user). */
  keyCreated: (
    actor: AuditParty,
    owner: AuditParty,
    key: KeyRef,
    context: AuditContext,
  ) =>
    event("key.created", actor, owner, {
      keyId: key.id,
      name: key.name,
      ...key.reachGroupId != null && { reachGroupId: key.reachGroupId },
    }, context),

  /**
   * An admin revoked the key, or (`reason`) the write of an admin that
   * deleted, disabled or demoted the key's minter revoked it, or the
   * deletion of the group the key was limited to.
   */
  keyRevoked: (
    actor: AuditParty | null,
    owner: AuditParty,
    key: KeyRef,
    context: AuditContext,
    reason?: typeof MINTER_REMOVED | typeof GROUP_DELETED,
  ) =>
    event(
      "key.revoked",
      actor,
      owner,
      reason === undefined
        ? { keyId: key.id, name: key.name }
        : { keyId: key.id, name: key.name, reason },
      context,
    ),

  ...webhookEvents,
};
