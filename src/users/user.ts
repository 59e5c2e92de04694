import type { Profile, ScimLink, Source } from "../accounts/fields.ts";
/** The account as the service shows it: never the password nor its hash. */
export const ROLES = ["admin", "viewer"] as const;
export type Role = (typeof ROLES)[number];

export interface Account {
  id: number;
  username: string;
  name: string;
  email: string;
  role: Role;
}

export interface User extends Account {
  /** ISO 8601 in UTC with milliseconds. */
  createdAt: string;
}

/** A disable in force: why, until when (null: until enabled), since when. */
export interface Disable {
  reason: string | null;
  /** ISO 8601 in UTC with milliseconds, or null. */
  until: string | null;
  /** ISO 8601 in UTC with milliseconds. */
  since: string;
}

/** A user's factors as they are shown: never a secret, a key or a code. */
export interface MfaSummary {
  totp: { enrolledAt: string } | null;
  passkeys: {
    id: number;
    name: string;
    createdAt: string;
    lastUsedAt: string | null;
  }[];
  recoveryCodesLeft: number;
}

/** A user as `GET /api/users/{id}` shows them; the list shows `User`. */
export interface UserDetail extends User, Profile {
  /** Null while the user may sign in. */
  disabled: Disable | null;
  /** ISO 8601 in UTC with milliseconds, or null before the first login. */
  lastLoginAt: string | null;
  /** The user's second factors (never a secret). */
  mfa: MfaSummary;
  /** Where the account came from (src/accounts/fields.ts). */
  source: Source;
  /** The live provisioning connection that owns the account, or null. */
  scim: ScimLink | null;
}

/** A list item with `include=state`: the account's state beside the list's fields. */
export interface UserWithState extends User {
  disabled: Disable | null;
  lastLoginAt: string | null;
  /** Whether a login needs a second factor. */
  mfaEnabled: boolean;
  source: Source;
}

/** One of a user's live sessions, as an admin sees it: never its token. */
export interface SessionInfo {
  id: string;
  createdAt: string;
  expiresAt: string;
  lastSeenAt: string | null;
  clientAddress: string | null;
  userAgent: string | null;
  /** The caller's own session. */
  current: boolean;
}

/** The largest id PostgreSQL's `integer` holds; ids are 1..USER_ID_MAX. */
export const USER_ID_MAX = 2_147_483_647;

/** A path segment as a user id, or null when it cannot name any user. */
export function parseUserId(segment: string): number | null {
  if (!/^[0-9]{1,10}$/.test(segment)) return null;
  const id = Number(segment);
  return id >= 1 && id <= USER_ID_MAX ? id : null;
}
