/**
 * What the SCIM store's parts share: the rows and states a connection reads
 * and writes, the refusals a write answers, and a write's connection.
 */
import type { PendingQuery, Row } from "postgres";
import type { Profile } from "../accounts/fields.ts";
import type { AuditContext } from "../audit/events.ts";
import type { ConnectionRef } from "../audit/scim-events.ts";
import type { Role } from "../users/user.ts";
import type { WriteBy } from "./write.ts";
import { isUniqueViolation } from "./user-rows.ts";
import { type Refusal, refuse, refusedFor } from "../refusal.ts";

type Fragment = PendingQuery<Row[]>;

/** A compiled filter (scim-filter.ts), as the lists take it. */
export type ScimWhere = Fragment;

/** A provisioning connection as the API shows it: never its token. */
export interface Connection {
  id: number;
  name: string;
  adminGroups: string[];
  /** ISO 8601 in UTC with milliseconds. */
  createdAt: string;
  /** The last request with its token, to the minute; null before the first. */
  lastUsedAt: string | null;
}

/** A user as a connection reads it. */
export interface ScimUserRow {
  id: number;
  username: string;
  name: string;
  email: string;
  role: Role;
  created: string;
  modified: string;
  /** The row's version: the user's ETag with `expired` (src/users/listing.ts). */
  version: string;
  expired: boolean;
  active: boolean;
  externalId: string | null;
  /** The attributes the service has no column for, as the connection sent them. */
  attributes: Record<string, unknown>;
  /** The account's profile fields (src/accounts/fields.ts). */
  profile: Profile;
  /** The connection's groups the user is a member of, by id. */
  groups: { value: number; display: string }[];
}

/** What a SCIM write makes of a user. */
export interface ScimUserState {
  username: string;
  name: string;
  email: string;
  active: boolean;
  externalId: string | null;
  attributes: Record<string, unknown>;
  /** The profile fields the body gives (src/accounts/fields.ts). */
  profile: Profile;
  /** Set to change the password; a new user without one cannot log in with a password. */
  passwordHash?: string;
}

export interface ScimGroupRow {
  id: number;
  displayName: string;
  externalId: string | null;
  created: string;
  modified: string;
  version: string;
  /** Undefined when not asked for. */
  members?: { value: number; display: string }[];
}

export interface ScimGroupState {
  displayName: string;
  externalId: string | null;
  members: number[];
}

/** What a SCIM body or write may be refused for: RFC 7644's kinds, and a unique key taken. */
export const SCIM_REASONS = [
  "invalidValue",
  "invalidFilter",
  "invalidPath",
  "noTarget",
  "mutability",
  "invalidSyntax",
  "duplicate",
] as const;

/** A SCIM body or write refused, with the words its answer says. */
export type ScimRefusal = Refusal<typeof SCIM_REASONS[number]>;

export const isScimRefusal = (x: unknown): x is ScimRefusal =>
  refusedFor(x, SCIM_REASONS);

/** A written request: the connection, the request's context and its deadline. */
export interface ScimWrite {
  connection: ConnectionRef;
  context: AuditContext;
  writeBy: WriteBy;
}

/** What a deletion of a user or group answers. */
export type ScimRemoved =
  | "deleted"
  | Refusal<"not_found">
  | Refusal<"managed_elsewhere">
  | Refusal<"precondition_failed">;

/** The write's outcome, or the refusal of the unique key it broke (and so rolled back). */
export async function orTaken<T>(
  write: Promise<T>,
): Promise<T | Refusal<"duplicate">> {
  try {
    return await write;
  } catch (e) {
    if (!isUniqueViolation(e)) throw e;
    const err = e as { constraint_name?: string };
    const constraint = err.constraint_name ?? "";
    return refuse(
      "duplicate",
      constraint.includes("external_id")
        ? "externalId is already taken in this connection"
        : constraint.includes("email")
        ? "the e-mail address is already taken"
        : "userName is already taken",
    );
  }
}

/** Attributes kept a user: at most this many bytes of JSON. */
export const ATTRIBUTES_MAX_BYTES = 16 * 1024;

/** The refusal of group members naming no user. */
export const unknownMembers = (ids: number[]): Refusal<"invalidValue"> =>
  refuse(
    "invalidValue",
    `no user has the id ${ids.slice(0, 5).join(", ")}${
      ids.length > 5 ? ", ..." : ""
    } (members)`,
  );
