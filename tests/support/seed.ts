/**
 * Many users and audit records made in SQL (generate_series), for the
 * query-plan test and the bench: a million of each in seconds, where the
 * API would take hours of bcrypt.
 */
import type { Sql } from "postgres";
import { canonicalKey, lookalikeKey } from "../../src/users/canonical.ts";

/** bcrypt (cost 10) of "seeded-password", the seeded users' password. */
export const SEEDED_PASSWORD = "seeded-password";
const SEEDED_HASH =
  "$2b$10$p8tKthMZPHHPtI13eS/1SulRbd6FJ8lJGBpSrHxh0z8f5.s7P5S1i";

/**
 * Adds users until there are `total`, in one statement: `userN` (N counting
 * from the number of users there were), `userN@example.com`, "Seeded User
 * N", all viewers but every `adminEvery`-th user added, who is an admin.
 * Every key is set as the service sets it (src/users/canonical.ts), computed
 * in SQL for these plain ASCII names (the fold is lower case; the look-alike
 * skeleton maps 1 to l, 0 to o and m to rn) and checked against the
 * service's own functions on the first and last row added, so the service
 * finds nothing to key at startup. Then vacuums and analyzes the table, as autovacuum would soon after on a
 * server (which also moves the trigram index's pending entries into the
 * index proper; until then a search reads them all).
 */
export async function seedUsers(
  sql: Sql,
  total: number,
  { adminEvery = 0 } = {},
): Promise<{ added: number }> {
  const [{ n }] = await sql<{ n: number }[]>`
    select count(*)::int as n from users`;
  await sql`
    insert into users (username, username_key, username_fold,
      username_skeleton, name, name_key, email, email_key, email_fold,
      email_skeleton, role, password_hash)
    select u, u, u, replace(translate(u, '10', 'lo'), 'm', 'rn'),
      'Seeded User ' || g, 'seeded user ' || g, e, e, e,
      replace(translate(e, '10', 'lo'), 'm', 'rn'),
      case when ${adminEvery}::int > 0 and (g - ${n}::int) % ${adminEvery}::int = 0
        then 'admin' else 'viewer' end,
      ${SEEDED_HASH}
    from generate_series(${n + 1}::int, ${total}::int) g,
      lateral (select 'user' || g as u, 'user' || g || '@example.com' as e) k`;
  const added = await sql<
    {
      username: string;
      email: string;
      username_fold: string;
      username_skeleton: string;
      email_fold: string;
      email_skeleton: string;
    }[]
  >`
    select username, email, username_fold, username_skeleton, email_fold,
      email_skeleton
    from users where username in (${"user" + (n + 1)}, ${"user" + total})`;
  for (const row of added) {
    const expected = {
      username_fold: canonicalKey(row.username),
      username_skeleton: lookalikeKey(row.username),
      email_fold: canonicalKey(row.email),
      email_skeleton: lookalikeKey(row.email),
    };
    for (const [column, key] of Object.entries(expected)) {
      const seeded = row[column as keyof typeof expected];
      if (seeded !== key) {
        throw new Error(
          `seeded ${column} of ${row.username} is ${seeded}, the service computes ${key}`,
        );
      }
    }
  }
  await sql`vacuum (analyze) users`;
  return { added: Math.max(0, total - n) };
}

/**
 * Appends `count` records to the audit trail after its head, one a second
 * up to now: per hundred, 60 `login.succeeded`, 20 `login.failed`, 10
 * `logout` (actor and target the user), 5 `user.role_changed`, 3
 * `user.created`, 1 `user.password_reset`, 1 `user.deleted` (actor
 * `actorId`, target a user); no other action. Users are spread over ids 1
 * to `users` (so `targetId` N has about count/users records). The head moves
 * to the last; their hashes are zeros, not a chain (verification reports
 * them): for reading the trail, not for verifying it. Then vacuums and
 * analyzes, as for users.
 */
export async function seedAudit(
  sql: Sql,
  count: number,
  { users, actorId }: { users: number; actorId: number },
): Promise<void> {
  await sql.begin(async (tx) => {
    const [{ head }] = await tx<{ head: string }[]>`
      select head_id::text as head from audit_chain where singleton for update`;
    await tx`
      insert into audit_events (id, time, action, actor_id, actor_username,
        target_id, target_username, details, request_id, client_address,
        prev_hash, hash)
      select ${head}::int8 + g, now() - (${count}::int - g) * interval '1 second',
        a.action, a.actor, 'user' || a.actor, s.target, 'user' || s.target,
        '{}', null, '127.0.0.1', decode(repeat('00', 32), 'hex'),
        decode(repeat('00', 32), 'hex')
      from generate_series(1, ${count}::int) g,
        lateral (select 1 + (g::int8 * 7919) % ${users}::int as target,
          g % 100 as slot) s,
        lateral (select
          case when s.slot < 60 then 'login.succeeded'
            when s.slot < 80 then 'login.failed'
            when s.slot < 90 then 'logout'
            when s.slot < 95 then 'user.role_changed'
            when s.slot < 98 then 'user.created'
            when s.slot < 99 then 'user.password_reset'
            else 'user.deleted' end as action,
          case when s.slot < 90 then s.target else ${actorId}::int end as actor) a`;
    await tx`
      update audit_chain set head_id = head_id + ${count}::int8 where singleton`;
  });
  await sql`vacuum (analyze) audit_events`;
}
