import type { TransactionSql } from "postgres";
import { newDeviceKey } from "../../auth/tokens.ts";

/**
 * Known devices (docs/security.md, "Login throttling"). The key that signs the `did` cookie lives in the database, so
 * every instance accepts every instance's cookies: one row, its key made
 * here at the first start that migrates, replaced by
 * `deno task rotate-device-key`. A device's failed logins are counted in
 * login_failures under client `device:<id>` (no address holds a `v`).
 *
 * `throttled_window` is the window (its start) whose first refused attempt
 * was recorded as `login.throttled`: the window's later refusals write no
 * record. A window restarted by any writer no longer matches it.
 */
export default async function (tx: TransactionSql) {
  await tx`
    create table device_key (
      singleton boolean primary key default true check (singleton),
      key bytea not null check (length(key) = 32),
      created_at timestamptz not null default now()
    )`;
  await tx`insert into device_key (key) values (${newDeviceKey()})`;
  await tx`alter table login_failures add column throttled_window timestamptz`;
}
