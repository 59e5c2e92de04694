/**
 * Users created through SCIM Bulk: the service as its own process (main.ts,
 * LOG_LEVEL warn) on a database of its own on the PostgreSQL server,
 * `--users` users without passwords in Bulk requests of `--batch` POSTs,
 * sent by `--writers` clients at once; prints users a second over the
 * whole run and the service's CPU per user. `--seed N` first adds N users
 * straight in the database (the million of a large organisation).
 * `--single`: one `POST /scim/v2/Users` a user instead (what `--batch`
 * then does not apply to); `--cpu-prof DIR`: the service's CPU profile
 * (`deno run --cpu-prof`) written there when it stops.
 *
 *   deno run -A tests/bench/scim_bulk_measure.ts [--users 20000] [--batch 1000] [--writers 12] [--seed 0] [--single] [--cpu-prof DIR]
 *
 * PostgreSQL: BENCH_DATABASE_URL, else DATABASE_URL, else the local server.
 */
import { spawnService } from "../support/process.ts";
import { seedUsers } from "../support/seed.ts";
import { cpuSeconds } from "./proc.ts";
import { scratchDatabase, sessionToken } from "./setup.ts";

const option = (name: string, fallback: number) => {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Number(Deno.args[i + 1]) : fallback;
};
const users = option("users", 20_000);
const batch = option("batch", 1_000);
const writers = option("writers", 12);
const seed = option("seed", 0);
const single = Deno.args.includes("--single");
const profileAt = Deno.args.indexOf("--cpu-prof");
const denoFlags = profileAt >= 0
  ? ["--cpu-prof", `--cpu-prof-dir=${Deno.args[profileAt + 1]}`]
  : [];

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
}, denoFlags);
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

/** A user as the bench's POST sends it. */
const user = (n: number) => ({
  schemas: ["urn:ietf:params:scim:schemas:core:2.0:User"],
  userName: `bulk${n}@example.com`,
  name: { givenName: "Bulk", familyName: `User ${n}` },
  externalId: `ext-${n}`,
});

/** The bodies (Bulk requests, or single users), made before the clock starts. */
const bodies = single
  ? Array.from({ length: users }, (_, n) => JSON.stringify(user(n)))
  : Array.from(
    { length: Math.ceil(users / batch) },
    (_, b) =>
      JSON.stringify({
        schemas: ["urn:ietf:params:scim:api:messages:2.0:BulkRequest"],
        Operations: Array.from(
          { length: Math.min(batch, users - b * batch) },
          (_, i) => ({
            method: "POST",
            path: "/Users",
            bulkId: `u${b * batch + i}`,
            data: user(b * batch + i),
          }),
        ),
      }),
  );

let next = 0;
/** The statuses of operations that did not answer 201, and how many. */
const failed = new Map<string, number>();
const fail = (status: string) =>
  failed.set(status, (failed.get(status) ?? 0) + 1);
const writer = async () => {
  while (next < bodies.length) {
    const body = bodies[next++];
    const res = await fetch(
      `${service.baseUrl}/scim/v2/${single ? "Users" : "Bulk"}`,
      {
        method: "POST",
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": "application/scim+json",
        },
        body,
      },
    );
    const answer = await res.json();
    if (single) {
      if (res.status !== 201) fail(`${res.status} ${JSON.stringify(answer)}`);
      continue;
    }
    if (res.status !== 200) throw new Error(JSON.stringify(answer));
    for (const op of answer.Operations) {
      if (op.status !== "201") {
        fail(`${op.status} ${JSON.stringify(op.response)}`);
      }
    }
  }
};
const load = (await new Deno.Command("uptime").output()).stdout;
/**
 * The database server's processes that work for this run: the backends
 * connected to its database and the server's own (WAL writer, checkpointer),
 * when the server runs on this machine.
 */
const postgresPids = async () =>
  (await db.sql<{ pid: number }[]>`
    select pid from pg_stat_activity
    where datname = current_database() or backend_type not in
      ('client backend', 'autovacuum worker', 'parallel worker')`)
    .map((r) => r.pid);
const pgBefore = await cpuSeconds(await postgresPids());
const cpuBefore = await cpuSeconds([service.pid]);
const started = performance.now();
await Promise.all(Array.from({ length: writers }, writer));
const seconds = (performance.now() - started) / 1000;
const cpu = await cpuSeconds([service.pid]) - cpuBefore;
// Backends that ended meanwhile are not counted: a floor.
const pgCpu = await cpuSeconds(await postgresPids()) - pgBefore;
const [{ n }] = await db.sql<{ n: number }[]>`
  select count(*)::int as n from scim_user_links`;
console.log(
  `${n} users created through ${
    single ? "POST /Users (" : `Bulk (${bodies.length} requests of ${batch}, `
  }${writers} writers${seed ? `, ${seed} users before` : ""}) in ${
    seconds.toFixed(1)
  } s: ${Math.round(n / seconds)} users a second, ${
    Math.round(cpu / n * 1e6)
  } µs of the service's CPU a user (PostgreSQL's: ${
    Math.round(pgCpu / n * 1e6)
  } µs); failed: ${failed.size === 0 ? "none" : JSON.stringify([...failed])}`,
);
console.log(`load before: ${new TextDecoder().decode(load).trim()}`);
