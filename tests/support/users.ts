import type { Sql } from "postgres";

/**
 * Adds `count` viewers named `<prefix>1`.. in one statement, keys included
 * (plain ASCII names, so lower case is their canonical form), for tests that
 * need more users than bcrypt could create through the API in time.
 * `padding` lengthens each name and e-mail by that many characters (up to
 * 180), for lists of many megabytes from fewer rows.
 */
export async function seedUsers(
  sql: Sql,
  count: number,
  prefix = "bulk",
  padding = 0,
) {
  const pad = "x".repeat(padding);
  // The service's own connection bounds statements; a big seed is no request.
  await sql.begin(async (tx) => {
    await tx`set local statement_timeout = 0`;
    await tx`
      insert into users (username, username_key, name, name_key, email, email_key, role, password_hash)
      select ${prefix} || g, lower(${prefix} || g), n, lower(n), e, lower(e), 'viewer', 'x'
      from generate_series(1, ${count}::int) g,
        lateral (select 'Bulk ' || ${prefix} || ' ' || g || ${pad} as n,
          ${prefix} || g || ${pad} || '@example.com' as e) f`;
  });
}
