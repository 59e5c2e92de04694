import type { TransactionSql } from "postgres";
// The key frozen with migration 002, not the service's live one.
import { canonicalKey } from "./002_canonical_keys.ts";

/**
 * What finding users and conditional requests need:
 *
 * - `name_key`, the canonical form of the name (as username_key and
 *   email_key are of theirs), computed by the service; one trigram GIN index
 *   over the three keys answers `q` (contains, in any of them) without
 *   reading every row. pg_trgm is a trusted extension: the database owner
 *   may create it.
 * - `users.version`: changes with every update of the row, so a user's ETag
 *   changes whenever the user does (a password reset included).
 * - `users_version`: one row whose version changes with every statement
 *   that writes users, in that statement's transaction, whatever instance
 *   or tool runs it: the list's ETag, known without reading the list.
 *
 * Versions are microseconds of the clock, kept strictly increasing: a
 * database made again from nothing never hands out a tag it gave before.
 */
export default async function (tx: TransactionSql) {
  await tx`create extension if not exists pg_trgm`;
  await tx`
    create function clock_version(previous bigint) returns bigint
    language sql volatile as $$
      select greatest(coalesce(previous, 0) + 1,
        (extract(epoch from clock_timestamp()) * 1000000)::bigint)
    $$`;

  await tx`alter table users
    add column name_key text,
    add column version bigint not null default clock_version(null)`;
  const rows = await tx<{ id: number; name: string }[]>`
    select id, name from users order by id`;
  if (rows.length) {
    await tx`
      update users u set name_key = k.name_key
      from unnest(
        ${rows.map((r) => r.id)}::int[],
        ${rows.map((r) => canonicalKey(r.name))}::text[]
      ) as k(id, name_key)
      where u.id = k.id`;
  }
  await tx`alter table users alter column name_key set not null`;
  await tx`
    create index users_search on users using gin (
      username_key gin_trgm_ops, name_key gin_trgm_ops, email_key gin_trgm_ops)`;

  await tx`
    create function users_row_version() returns trigger
    language plpgsql as $$
    begin
      new.version := clock_version(old.version);
      return new;
    end $$`;
  await tx`
    create trigger users_row_version before update on users
    for each row execute function users_row_version()`;

  await tx`
    create table users_version (
      singleton boolean primary key default true check (singleton),
      version bigint not null
    )`;
  await tx`insert into users_version (version) values (clock_version(null))`;
  await tx`
    create function users_list_version() returns trigger
    language plpgsql as $$
    begin
      update users_version set version = clock_version(version);
      return null;
    end $$`;
  await tx`
    create trigger users_list_version
    after insert or update or delete or truncate on users
    for each statement execute function users_list_version()`;
}
