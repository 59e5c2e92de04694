/**
 * The streamed list in the default order learns where its next batch starts
 * from its last user's row, read after the batch. A user deleted between
 * the two must not end the list, repeat a user or lose one: the batch is
 * read again. Here every other user is deleted exactly there: the list and
 * the deletions share one connection, whose statements run in the order
 * they are sent, and each deletion is sent right after the batch that
 * reads its user, before the read of that user's row.
 */
import postgres from "postgres";
import { createStore } from "../src/db/store.ts";
import { assertEquals } from "./support/assert.ts";
import { migratedDatabaseUrl } from "./support/service.ts";

const USERS = 40;

Deno.test("a streamed list whose batches' last users are deleted as it reads meets every other user once, in order", async () => {
  await using database = await migratedDatabaseUrl();
  // One connection (the embedded database takes no more).
  const sql = postgres(database.url, { max: 1, onnotice: () => {} });
  const store = createStore(sql);
  try {
    const names = Array.from({ length: USERS }, (_, i) => `u${i}`);
    // Each row its own creation time (clock_timestamp), in name order.
    await sql`
      insert into users (username, username_key, name, name_key, email,
        email_key, role, password_hash)
      select n, n, n, n, n || '@example.com', n || '@example.com',
        'viewer', 'x'
      from unnest(${names}::text[]) with ordinality as t(n, i)
      order by i`;
    const [{ admins }] = await sql<{ admins: number }[]>`
      select count(*)::int as admins from users where username not like 'u%'`;
    const doomed = new Set(names.filter((_, i) => i % 2 === 1));
    const kept = names.filter((n) => !doomed.has(n));

    // Batches of one user: every user is a batch's last.
    const list = store.users.listJson({}, undefined, 1)[Symbol.asyncIterator]();
    const seen: string[] = [];
    let deleted = 0;
    for (let step = 0; step < USERS + admins + 1; step++) {
      const last = seen.at(-1);
      const coming = last === undefined
        ? names[0]
        : names[names.indexOf(last) + 1];
      const next = list.next();
      if (coming !== undefined && doomed.has(coming)) {
        // Sent after the batch's read, which reads `coming`.
        await Promise.all([
          next,
          sql`delete from users where username = ${coming}`,
        ]);
        deleted++;
      }
      const { done, value } = await next;
      if (done) break;
      seen.push(
        ...JSON.parse(`[${value}]`).map((u: { username: string }) => u.username)
          .filter((n: string) => names.includes(n)),
      );
    }
    assertEquals(deleted, doomed.size);
    assertEquals(seen, kept);
    assertEquals(
      (await sql`select count(*)::int as n from users where username like 'u%'`)[
        0
      ].n,
      kept.length,
    );
    // Newest first, a batch's end found the same way.
    const newestFirst = (await Array.fromAsync(
      store.users.listJson({}, undefined, 1, "user", "-createdAt"),
    )).flatMap((b) => JSON.parse(`[${b}]`))
      .map((u: { username: string }) => u.username)
      .filter((n: string) => names.includes(n));
    assertEquals(newestFirst, kept.toReversed());
  } finally {
    await store.stop();
    await sql.end();
  }
});
