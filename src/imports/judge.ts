/**
 * An import's records judged as `POST /api/users` judges a body, with its
 * messages and in its check order (account-rules.ts), then a hash given
 * (hashes.ts) and the fields an export adds. `id` and `lastLoginAt` (an
 * export's) are ignored; a field that is `null` or empty is absent.
 */
import { PROFILE_FIELDS, profileValue } from "../accounts/fields.ts";
import { knownHash } from "../auth/hashes.ts";
import type { PasswordHasher } from "../auth/passwords.ts";
import type {
  ImportedDisable,
  ImportedUser,
  RefusedLine,
  StoredRecord,
  Verdict,
} from "../db/imports.ts";
import { MSG } from "../http/messages.ts";
import { refuse } from "../refusal.ts";
import { storableInstant } from "../http/time.ts";
import {
  checkNewAccount,
  codePoints,
  ImportedAccountSchema,
} from "../users/account-rules.ts";
import { type Role, ROLES } from "../users/user.ts";

/** Plain passwords hashed per batch at most: each is a bcrypt hash's work. */
export const PASSWORDS_PER_BATCH = 32;

const absent = (v: unknown) => v === undefined || v === null || v === "";

const LONE_SURROGATE = /\p{Cs}/u;
/** Text PostgreSQL can hold (no NUL, no lone surrogate). */
const storable = (s: string) =>
  !s.includes("\u0000") && !LONE_SURROGATE.test(s);

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)$/i;
/** An RFC 3339 time PostgreSQL reads as written; undefined for anything else. */
const instant = (v: unknown): string | undefined => {
  if (typeof v !== "string" || !ISO.test(v)) return undefined;
  const t = new Date(v);
  return Number.isNaN(t.getTime()) || !storableInstant(t)
    ? undefined
    : t.toISOString();
};

/** The record's line refused for the rule it broke, in the contract's words. */
const refused = (line: number, message: string): RefusedLine => ({
  line,
  refused: refuse("invalidValue", message),
});

type Judged = Omit<ImportedUser, "passwordHash"> & {
  passwordHash?: string;
  /** A plain password, to be hashed with bcrypt. */
  password?: string;
};

/** One record's verdict, before any plain password is hashed. */
function judgeOne(r: StoredRecord): Judged | RefusedLine {
  const line = r.line;
  if (r.record === null) return refused(line, r.problem ?? MSG.invalidBody);
  const v = JSON.parse(r.record) as Record<string, unknown>;
  const text = (name: string) => absent(v[name]) ? undefined : v[name];
  const fields = {
    username: text("username"),
    name: text("name"),
    email: text("email"),
    password: text("password"),
  };
  // What POST /api/users would refuse: a missing field first, then the role.
  for (const f of ["username", "name", "email", "password"] as const) {
    const value = fields[f];
    if (
      value !== undefined && (typeof value !== "string" || !storable(value))
    ) {
      return refused(line, MSG.allFieldsRequired);
    }
  }
  const role = text("role");
  const checked = checkNewAccount(fields, ImportedAccountSchema);
  if (!checked.ok && checked.message === MSG.allFieldsRequired) {
    return refused(line, checked.message);
  }
  if (role !== undefined && !ROLES.includes(role as Role)) {
    return refused(line, MSG.roleMustBeAdminOrViewer);
  }
  if (!checked.ok) return refused(line, checked.message);
  const hash = text("passwordHash");
  if (hash !== undefined) {
    if (typeof hash !== "string" || !knownHash(hash)) {
      return refused(line, MSG.unsupportedPasswordHash);
    }
    if (fields.password !== undefined) return refused(line, MSG.invalidBody);
  }
  const externalId = v.externalId;
  if (
    externalId !== undefined && externalId !== null &&
    (typeof externalId !== "string" || !storable(externalId) ||
      codePoints(externalId) > 255)
  ) return refused(line, MSG.invalidBody);
  let createdAt: string | undefined;
  if (!absent(v.createdAt)) {
    createdAt = instant(v.createdAt);
    if (!createdAt) return refused(line, MSG.invalidBody);
  }
  const disabled = disableOf(v.disabled);
  if (disabled === false) return refused(line, MSG.invalidBody);
  // The profile's fields (src/accounts/fields.ts), absent when null or empty.
  const profile: Record<string, string> = {};
  for (const f of PROFILE_FIELDS) {
    if (absent(v[f.wire])) continue;
    const value = profileValue(f, v[f.wire]);
    if (value === "tooLong") return refused(line, f.tooLong);
    if (value === null) continue;
    if (value === "invalid") return refused(line, MSG.invalidBody);
    profile[f.wire] = value;
  }
  const { account } = checked;
  return {
    line,
    username: account.username,
    name: account.name,
    email: account.email,
    ...(role !== undefined && { role: role as Role }),
    ...(hash !== undefined && { passwordHash: hash as string }),
    ...(account.password !== undefined && { password: account.password }),
    ...(externalId !== undefined &&
      { externalId: externalId as string | null }),
    ...(createdAt !== undefined && { createdAt }),
    ...(disabled !== undefined && { disabled }),
    ...(Object.keys(profile).length > 0 && { profile }),
  };
}

/**
 * An export's `disabled` (`null`, or `{reason, until, since}`); in CSV
 * `true` or `false`. False when malformed.
 */
function disableOf(v: unknown): ImportedDisable | null | undefined | false {
  if (v === undefined || v === "") return undefined;
  if (v === null || v === "false" || v === false) return null;
  if (v === "true" || v === true) {
    return { reason: null, until: null, since: null };
  }
  if (typeof v !== "object" || Array.isArray(v)) return false;
  const d = v as Record<string, unknown>;
  const reason = d.reason ?? null;
  if (
    reason !== null &&
    (typeof reason !== "string" || !storable(reason) ||
      codePoints(reason) > 200)
  ) return false;
  const until = d.until == null ? null : instant(d.until);
  const since = d.since == null ? null : instant(d.since);
  if (until === undefined || since === undefined) return false;
  return { reason, until, since };
}

/**
 * The records judged, up to the one whose plain password would pass
 * PASSWORDS_PER_BATCH (the rest wait for the next batch): each plain
 * password hashed with bcrypt, on the thread pool, side by side.
 */
export async function judgeRecords(
  records: StoredRecord[],
  passwords: PasswordHasher,
): Promise<Verdict[]> {
  const judged: (Judged | RefusedLine)[] = [];
  let plain = 0;
  for (const r of records) {
    const verdict = judgeOne(r);
    if ("password" in verdict && verdict.password !== undefined) {
      if (plain === PASSWORDS_PER_BATCH) break;
      plain++;
    }
    judged.push(verdict);
  }
  return await Promise.all(judged.map(async (j) => {
    if (!("password" in j) || j.password === undefined) return j;
    const { password, ...rest } = j;
    return { ...rest, passwordHash: await passwords.hash(password) };
  }));
}
