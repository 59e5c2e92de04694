import type { TransactionSql } from "postgres";
import { buildIndex } from "../migrate.ts";

/**
 * Provisioning from an identity provider (docs/scim.md). Expand-only: new tables, one nullable
 * column of users with a trigger that fills it, and indexes built without
 * blocking writes, so a release without them keeps working beside this one.
 *
 * - `scim_connections`: one per identity provider; the SHA-256 of its
 *   bearer token, never the token; `revoked_at` set when it is deleted (its
 *   users and groups stay).
 * - `scim_user_links`: a user as a connection knows it: its `externalId`
 *   (unique per connection) and the attributes the service has no column
 *   for, kept as sent (src/db/scim.ts bounds them).
 * - `scim_groups`, `scim_members`: a connection's groups and their members;
 *   a deleted user leaves every group (cascade).
 * - `users.modified_at`: when the row last changed in anything a SCIM
 *   client reads (`meta.lastModified`); null for a row unchanged since it
 *   was created, or changed by a release without the trigger. Logins,
 *   password changes and the row's version do not count, so the list
 *   version (migration 017) moves no more often than before.
 * - `users_modified_id`: `sortBy=meta.lastModified` in index order.
 *
 * Outside a transaction, like 016, so the index on users is built without
 * blocking writes; every step can run again after a failure halfway.
 */
export const transaction = false;

export default async function (
  sql: TransactionSql,
  context: { inTransaction: boolean },
) {
  await sql`
    create table if not exists scim_connections (
      id integer generated always as identity primary key,
      name text not null,
      admin_groups text[] not null default '{}',
      token_hash bytea not null unique,
      created_at timestamptz not null default clock_timestamp(),
      revoked_at timestamptz
    )`;
  await sql`
    create table if not exists scim_user_links (
      connection_id integer not null references scim_connections (id),
      user_id integer not null references users (id) on delete cascade,
      external_id text,
      attributes jsonb not null default '{}',
      primary key (connection_id, user_id),
      unique (connection_id, external_id)
    )`;
  await sql`
    create index if not exists scim_user_links_user
    on scim_user_links (user_id)`;
  await sql`
    create table if not exists scim_groups (
      id integer generated always as identity primary key,
      connection_id integer not null references scim_connections (id),
      display_name text not null,
      external_id text,
      created_at timestamptz not null default clock_timestamp(),
      modified_at timestamptz not null default clock_timestamp(),
      version bigint not null default 1,
      unique (connection_id, external_id)
    )`;
  await sql`
    create index if not exists scim_groups_connection_id
    on scim_groups (connection_id, id)`;
  await sql`
    create table if not exists scim_members (
      group_id integer not null references scim_groups (id) on delete cascade,
      user_id integer not null references users (id) on delete cascade,
      primary key (group_id, user_id)
    )`;
  await sql`
    create index if not exists scim_members_user on scim_members (user_id)`;

  await sql`alter table users add column if not exists modified_at timestamptz`;
  await sql`
    create or replace function users_modified_at() returns trigger
    language plpgsql as $$
    begin
      new.modified_at := clock_timestamp();
      return new;
    end $$`;
  await sql`drop trigger if exists users_modified_at on users`;
  await sql`
    create trigger users_modified_at before update on users
    for each row
    when (to_jsonb(old) - array['last_login_at', 'password_hash',
        'password_version', 'version', 'modified_at']
      is distinct from to_jsonb(new) - array['last_login_at', 'password_hash',
        'password_version', 'version', 'modified_at'])
    execute function users_modified_at()`;
  await buildIndex(
    sql,
    "users_modified_id",
    "users ((coalesce(modified_at, created_at)), id)",
    context,
  );
}
