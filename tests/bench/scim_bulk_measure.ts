/**
 * Users created through SCIM Bulk: the service as its own process (main.ts,
 * LOG_LEVEL warn) on a database of its own on the PostgreSQL server,
 * `--users` users without passwords in Bulk requests of `--batch` POSTs,
 * sent by `--writers` clients at once; prints users a second over the
 * whole run. `--seed N` first adds N users straight in the database (the
 * million of a large organisation).
 *
 *   deno run -A tests/bench/scim_bulk_measure.ts [--users 20000] [--batch 1000] [--writers 12] [--seed 0]
 *
 * PostgreSQL: BENCH_DATABASE_URL, else DATABASE_URL, else the local server.
 */
import { spawnService } from "../support/process.ts";
import { seedUsers } from "../support/seed.ts";
import { scratchDatabase, sessionToken } from "./setup.ts";

const option = (name: string, fallback: number) => {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Number(Deno.args[i + 1]) : fallback;
};
const users = option("users", 20_000);
const batch = option("batch", 1_000);
const writers = option("writers", 12);
const seed = option("seed", 0);

const ADMIN = { username: "bench-admin", password: "bench-admin-password" };

await using db = await scratchDatabase("ua_bulk");
{
  // Migrates the empty database and creates the bench's admin.
  await using _ = await spawnService({
    DATABASE_URL: db.url,
    ADMIN_USERNAME: ADMIN.username,
    ADMIN_PASSWORD: ADMIN.password,
  });
}
if (seed > 0) await seedUsers(db.sql, seed + 1);
await using service = await spawnService({
  DATABASE_URL: db.url,
  ADMIN_USERNAME: ADMIN.username,
  ADMIN_PASSWORD: ADMIN.password,
});
const sid = await sessionToken(service.baseUrl, ADMIN);
const made = await fetch(`${service.baseUrl}/api/scim/connections`, {
  method: "POST",
  headers: {
    cookie: `sid=${sid}`,
    "content-type": "application/json",
    origin: service.baseUrl,
  },
  body: JSON.stringify({ name: "Bench" }),
});
if (made.status !== 201) throw new Error(`connection: ${made.status}`);
const { token } = await made.json();

/** The Bulk bodies, made before the clock starts. */
const bodies = Array.from(
  { length: Math.ceil(users / batch) },
  (_, b) =>
    JSON.stringify({
      schemas: ["urn:ietf:params:scim:api:messages:2.0:BulkRequest"],
      Operations: Array.from(
        { length: Math.min(batch, users - b * batch) },
        (_, i) => {
          const n = b * batch + i;
          return {
            method: "POST",
            path: "/Users",
            bulkId: `u${n}`,
            data: {
              schemas: ["urn:ietf:params:scim:schemas:core:2.0:User"],
              userName: `bulk${n}@example.com`,
              name: { givenName: "Bulk", familyName: `User ${n}` },
              externalId: `ext-${n}`,
            },
          };
        },
      ),
    }),
);

let next = 0;
let failed = 0;
const writer = async () => {
  while (next < bodies.length) {
    const body = bodies[next++];
    const res = await fetch(`${service.baseUrl}/scim/v2/Bulk`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/scim+json",
      },
      body,
    });
    const answer = await res.json();
    if (res.status !== 200) throw new Error(JSON.stringify(answer));
    for (const op of answer.Operations) if (op.status !== "201") failed++;
  }
};
const load = (await new Deno.Command("uptime").output()).stdout;
const started = performance.now();
await Promise.all(Array.from({ length: writers }, writer));
const seconds = (performance.now() - started) / 1000;
const [{ n }] = await db.sql<{ n: number }[]>`
  select count(*)::int as n from scim_user_links`;
console.log(
  `${n} users created through Bulk (${bodies.length} requests of ${batch}, ${writers} writers${
    seed ? `, ${seed} users before` : ""
  }) in ${seconds.toFixed(1)} s: ${
    Math.round(n / seconds)
  } users a second; ${failed} operations failed`,
);
console.log(`load before: ${new TextDecoder().decode(load).trim()}`);
