/**
 * A list limited to groups' members read by a walk of the order's index
 * (src/db/user-walk.ts, WALK): with the walk's thresholds made small, every
 * page of every order, for groups spread over the list, clustered at its
 * end and too small to walk, alone and together, is the page the
 * membership gives; the walk ran, and fell back where its budget ran out.
 */
import postgres from "postgres";
import { assert, assertEquals } from "./support/assert.ts";
import { migratedDatabaseUrl } from "./support/service.ts";
import { createStore } from "../src/db/store.ts";
import { WALK } from "../src/db/user-walk.ts";
import { seedUsers } from "./support/users.ts";

const SORTS = [
  "createdAt",
  "-createdAt",
  "username",
  "-username",
  "lastLoginAt",
  "-lastLoginAt",
] as const;

Deno.test("a limited list's pages are the same walked or read from the membership, in every order", async () => {
  await using database = await migratedDatabaseUrl();
  /** The statements of the walked runs. */
  const statements: string[] = [];
  let walking = false;
  const sql = postgres(database.url, {
    max: 1,
    onnotice: () => {},
    debug: (_c, query) => walking && statements.push(query),
  });
  const store = createStore(sql);
  const kept = { ...WALK };
  try {
    await seedUsers(sql, 3000, "walk");
    // Every seventh has signed in, at times not in the order of ids.
    await sql`
      update users set last_login_at = now() - (id * 37 % 1009) * interval '1 minute'
      where id % 7 = 0`;
    const group = async (name: string, members: string) => {
      const [{ id }] = await sql<{ id: number }[]>`
        insert into scim_groups (connection_id, display_name)
        values (null, ${name}) returning id`;
      await sql.unsafe(
        `insert into scim_members (group_id, user_id)
         select ${id}, id from users where ${members}`,
      );
      return id;
    };
    const spread = await group("spread", "id % 5 = 0");
    const [{ last }] = await sql<{ last: number }[]>`
      select max(id) as last from users`;
    const clustered = await group("clustered", `id > ${last - 300}`);
    const small = await group("small", "id % 97 = 0 and id < 4000");
    await sql`analyze`;

    /** Every page of the list, `limit` at a time, as usernames. */
    const walked = async (
      groupIds: number[],
      sort: typeof SORTS[number],
      limit: number,
    ) => {
      const seen: string[] = [];
      let after;
      do {
        const page = await store.users.listPage(
          { reach: { groupIds } },
          after,
          limit,
          "user",
          sort,
        );
        seen.push(...page.rows.map((r) => JSON.parse(r).username));
        after = page.next;
      } while (after);
      return seen;
    };

    const sets = [[spread], [clustered], [small], [spread, clustered]];
    for (const groupIds of sets) {
      for (const sort of SORTS) {
        // The membership's answer: no group is large enough to walk.
        Object.assign(WALK, { members: 1_000_000 });
        walking = false;
        const want = await walked(groupIds, sort, 1000);
        const [{ n }] = await sql<{ n: number }[]>`
          select count(distinct user_id)::int as n from scim_members
          where group_id = any(${groupIds}::int[])`;
        assertEquals(want.length, n, `${groupIds} ${sort}: every member`);
        Object.assign(WALK, { budget: 500, members: 100, page: 200 });
        walking = true;
        for (const limit of [1, 7, 50]) {
          assertEquals(
            await walked(groupIds, sort, limit),
            want,
            `groups ${groupIds}, ${sort}, limit ${limit}`,
          );
        }
      }
    }
    // The walk ran, and read the membership where its budget ran out.
    const walks = statements.filter((q) =>
      q.includes("select users.id from (")
    );
    assert(walks.length > 100, `${walks.length} walks`);
  } finally {
    Object.assign(WALK, kept);
    await store.stop();
    await sql.end();
  }
});
