import type { TransactionSql } from "postgres";
import { lowerCaseKey as canonicalKey } from "./frozen/lower_case_key.ts";

/**
 * Username and e-mail become unique under the service's canonical key
 * instead of the database's lower(): the keys are computed here for existing
 * rows, and rows that collide under the new key stop the migration (and so
 * the startup) with their ids, for an operator to resolve.
 */
export default async function (tx: TransactionSql) {
  await tx`alter table users add column username_key text, add column email_key text`;
  const rows = await tx<{ id: number; username: string; email: string }[]>`
    select id, username, email from users order by id`;
  const keyed = rows.map((r) => ({
    id: r.id,
    usernameKey: canonicalKey(r.username),
    emailKey: canonicalKey(r.email),
  }));
  const collisions = [
    ...collide(keyed, (r) => r.usernameKey, "username"),
    ...collide(keyed, (r) => r.emailKey, "email"),
  ];
  if (collisions.length) {
    throw new MigrationConflict(
      `Existing users collide under the canonical username/email key: ${
        collisions.join("; ")
      }. Rename or delete all but one of each group (docs/operations.md, "Look-alike usernames"), then start again.`,
    );
  }
  if (keyed.length) {
    await tx`
      update users u set username_key = k.username_key, email_key = k.email_key
      from unnest(
        ${keyed.map((r) => r.id)}::int[],
        ${keyed.map((r) => r.usernameKey)}::text[],
        ${keyed.map((r) => r.emailKey)}::text[]
      ) as k(id, username_key, email_key)
      where u.id = k.id`;
  }
  await tx`alter table users
    alter column username_key set not null,
    alter column email_key set not null`;
  await tx`drop index users_username_key`;
  await tx`drop index users_email_key`;
  await tx`create unique index users_username_key on users (username_key)`;
  await tx`create unique index users_email_key on users (email_key)`;
}

/** Startup cannot go on until an operator resolves these rows. */
export class MigrationConflict extends Error {}

/** The groups of rows that share a key, each as "<what> of ids 4, 17". */
export function collide<T extends { id: number }>(
  rows: T[],
  key: (row: T) => string,
  what: string,
): string[] {
  const groups = Map.groupBy(rows, key);
  return [...groups.values()].filter((g) => g.length > 1).map((g) =>
    `${what} of ids ${g.map((r) => r.id).join(", ")}`
  );
}
