import type { AuditParty } from "../audit/chain.ts";
import type { AuditContext } from "../audit/events.ts";
import { lowerCaseKey } from "../users/canonical.ts";
import type { Role } from "../users/user.ts";
import { identityKeys } from "./user-rows.ts";
import type { Refusal } from "../refusal.ts";
import {
  NO_PASSWORD,
  PROFILE_FIELDS,
  type ProfileChange,
} from "../accounts/fields.ts";

export type OnConflict = "fail" | "skip" | "update";

/** A disable as an import gives it (an export's `disabled`). */
export interface ImportedDisable {
  reason: string | null;
  until: string | null;
  since: string | null;
}

/**
 * A record that passed the account rules. For an update the fields given
 * replace the stored ones: `undefined` is a field the record did not give.
 */
export interface ImportedUser {
  line: number;
  username: string;
  name: string;
  email: string;
  role?: Role;
  /** A bcrypt hash of a given password, or a hash given as is. */
  passwordHash?: string;
  externalId?: string | null;
  createdAt?: string;
  disabled?: ImportedDisable | null;
  /** The profile fields the record gives (src/accounts/fields.ts). */
  profile?: ProfileChange;
}

/**
 * Why a record is refused: a rule of `POST /api/users` broken (the
 * contract's message its detail), or a name or e-mail already taken.
 */
export type LineRefusal = Refusal<"invalidValue" | "duplicate">;

/** A line refused, before its error is rendered (`lineError`). */
export interface RefusedLine {
  line: number;
  refused: LineRefusal;
}

/** What the job runner judged of a record: a user to write, or why its line is refused. */
export type Verdict = ImportedUser | RefusedLine;

/** The message of a name or e-mail already taken, in the file or before it: `POST /api/users`'s. */
const DUPLICATE = "Username or email already exists";

/** A refused line's error as the import's errors show it. */
export const lineError = ({ line, refused }: RefusedLine) => ({
  line,
  error: refused.reason === "duplicate" ? DUPLICATE : refused.detail!,
});

/** A user of a batch with the keys its row is stored under. */
interface KeyedUser {
  user: ImportedUser;
  keys: ReturnType<typeof identityKeys>;
}

/**
 * A batch as `write` takes it: its verdicts, the users among them with
 * their keys, and their rows as the insert reads them (one JSON text).
 * Made by `prepareBatch`, while the batch before is written.
 */
export interface PreparedBatch {
  verdicts: Verdict[];
  users: KeyedUser[];
  rows: string;
  /** Two of its users share a key: they cannot all be inserted. */
  clashes: boolean;
}

/** The job a batch belongs to, as its writes need it. */
export interface BatchJob {
  id: number;
  onConflict: OnConflict;
  dryRun: boolean;
  /** The actor and context of the batch's records. */
  actor: AuditParty;
  context: AuditContext;
  /** The uploader's session (its token's SHA-256), which a password change of their own keeps. */
  session: Uint8Array | null;
}

/** What a batch wrote: the counts' parts and the lines refused. */
export interface BatchWritten {
  created: number;
  updated: number;
  skipped: number;
  errors: RefusedLine[];
}

export { NO_PASSWORD };

/**
 * The work of a batch that needs no database: the users' keys (canonical
 * forms, look-alike skeletons) and the rows the insert reads.
 */
export function prepareBatch(verdicts: Verdict[]): PreparedBatch {
  const users: KeyedUser[] = [];
  for (const v of verdicts) {
    if (!("refused" in v)) users.push({ user: v, keys: identityKeys(v) });
  }
  const seen = new Set<string>();
  let clashes = false;
  for (const { keys } of users) {
    for (
      const key of [
        `u${keys.username_fold}`,
        `e${keys.email_fold}`,
        `U${keys.username_skeleton}`,
        `E${keys.email_skeleton}`,
        `k${keys.username_key}`,
        `K${keys.email_key}`,
      ]
    ) {
      if (seen.has(key)) clashes = true;
      seen.add(key);
    }
  }
  const rows = JSON.stringify(users.map(({ user: u, keys }) => ({
    line: u.line,
    username: u.username,
    name: u.name,
    name_key: lowerCaseKey(u.name),
    email: u.email,
    role: u.role ?? "viewer",
    password_hash: u.passwordHash ?? NO_PASSWORD,
    ...keys,
    external_id: u.externalId ?? null,
    created_at: u.createdAt ?? null,
    disabled: u.disabled ? true : false,
    disabled_since: u.disabled?.since ?? null,
    disabled_reason: u.disabled?.reason ?? null,
    disabled_until: u.disabled?.until ?? null,
    ...Object.fromEntries(
      PROFILE_FIELDS.map((f) => [f.column, u.profile?.[f.wire] ?? null]),
    ),
  })));
  return { verdicts, users, rows, clashes };
}
