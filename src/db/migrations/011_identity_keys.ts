import type { TransactionSql } from "postgres";
import { collide, MigrationConflict } from "./002_canonical_keys.ts";
import { foldKey, lookalikeKey } from "./frozen/identity_keys_011.ts";

/**
 * Usernames and e-mails become unique under two more keys, in new columns
 * beside `username_key`/`email_key` (which stay, unique and written, for
 * the previous release while a release rolls out):
 *
 * - `*_fold`: NFKC_Casefold, so `STRASSE` and `straße` are one name;
 * - `*_skeleton`: the UTS #39 confusable skeleton, regardless of case, so
 *   all-Cyrillic `ѕсоре` and Latin `scope` are one name.
 *
 * The columns are nullable: a row an older release inserts gets its keys
 * from the service (at startup and in housekeeping). Existing rows are keyed
 * here; rows that collide under a new key stop the migration (and so the
 * startup) with their ids, for an operator to resolve.
 */
export default async function (tx: TransactionSql) {
  await tx`alter table users
    add column username_fold text, add column email_fold text,
    add column username_skeleton text, add column email_skeleton text`;
  const rows = await tx<{ id: number; username: string; email: string }[]>`
    select id, username, email from users order by id`;
  const keyed = rows.map((r) => ({
    id: r.id,
    usernameFold: foldKey(r.username),
    emailFold: foldKey(r.email),
    usernameSkeleton: lookalikeKey(r.username),
    emailSkeleton: lookalikeKey(r.email),
  }));
  const collisions = new Set([
    ...collide(keyed, (r) => r.usernameFold, "username"),
    ...collide(keyed, (r) => r.usernameSkeleton, "username"),
    ...collide(keyed, (r) => r.emailFold, "email"),
    ...collide(keyed, (r) => r.emailSkeleton, "email"),
  ]);
  if (collisions.size) {
    throw new MigrationConflict(
      `Existing users look alike under the case-folded or confusable (UTS #39 skeleton) username/email key: ${
        [...collisions].join("; ")
      }. Rename or delete all but one of each group (README, "Look-alike usernames"), then start again.`,
    );
  }
  if (keyed.length) {
    await tx`
      update users u set username_fold = k.username_fold,
        email_fold = k.email_fold, username_skeleton = k.username_skeleton,
        email_skeleton = k.email_skeleton
      from unnest(
        ${keyed.map((r) => r.id)}::int[],
        ${keyed.map((r) => r.usernameFold)}::text[],
        ${keyed.map((r) => r.emailFold)}::text[],
        ${keyed.map((r) => r.usernameSkeleton)}::text[],
        ${keyed.map((r) => r.emailSkeleton)}::text[]
      ) as k(id, username_fold, email_fold, username_skeleton, email_skeleton)
      where u.id = k.id`;
  }
  await tx`create unique index users_username_fold on users (username_fold)`;
  await tx`create unique index users_email_fold on users (email_fold)`;
  await tx`create unique index users_username_skeleton on users (username_skeleton)`;
  await tx`create unique index users_email_skeleton on users (email_skeleton)`;
}
