import type { Sql } from "postgres";

/**
 * Adds `count` viewers named `<prefix>1`.. in one statement, keys included
 * (plain ASCII names, so lower case is their canonical form), for tests that
 * need more users than bcrypt could create through the API in time.
 */
export async function seedUsers(sql: Sql, count: number, prefix = "bulk") {
  await sql`
    insert into users (username, username_key, name, name_key, email, email_key, role, password_hash)
    select ${prefix} || g, lower(${prefix} || g),
      'Bulk ' || ${prefix} || ' ' || g, lower('Bulk ' || ${prefix} || ' ' || g),
      ${prefix} || g || '@example.com', lower(${prefix} || g || '@example.com'),
      'viewer', 'x'
    from generate_series(1, ${count}::int) g`;
}
