/**
 * What the one write path (account-writes.ts) takes: a change of an account
 * and a new account, whichever door they come through.
 */
import type { ProfileChange } from "../accounts/fields.ts";
import type { Role } from "../users/user.ts";
import type { NewUser } from "./user-rows.ts";

/** A disable as the write path takes it; `since` only when an import carries one. */
export interface DisableChange {
  reason: string | null;
  /** ISO 8601; null: until enabled. */
  until: string | null;
  since?: string | null;
}

/** What changes; a field left out stays as it is. */
export interface AccountChange {
  username?: string;
  name?: string;
  email?: string;
  profile?: ProfileChange;
  /** The id an import gave the account (SCIM keeps its own, per connection). */
  externalId?: string | null;
  role?: Role;
  passwordHash?: string;
  /**
   * The new password is the account holder's own, the current one proven
   * (POST /api/auth/password): recorded as `user.password_changed`, not as
   * a reset.
   */
  ownPassword?: boolean;
  /** A disable in force from now (or its reason and end changed); null lifts it. */
  disabled?: DisableChange | null;
  /**
   * Changes the door made beside the account's row (SCIM's kept
   * attributes, its externalId), listed in the same `user.updated` record.
   */
  alsoChanged?: string[];
}

/** A new account as every door creates it. */
export interface NewAccount extends NewUser {
  profile?: ProfileChange;
  /** Created disabled (a SCIM user sent inactive). */
  disabled?: DisableChange;
}
