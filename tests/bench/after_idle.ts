/**
 * What a spell of idleness costs the next seconds of load: the service
 * serves full lists, then `GET /api/auth/me`, sits idle, then serves
 * `GET /api/auth/me` again; printed is the CPU each request cost (user +
 * system time of the process over its requests) second by second, before
 * the idle spell and after it. Each variant is a fresh service process with
 * the given `deno run` flags; by default V8 as it comes, and V8 without its
 * memory reducer (which shrinks the heap after some seconds of low
 * allocation).
 *
 *   deno run -A tests/bench/after_idle.ts [--users 1000] [--lists 20]
 *     [--idle 10] [--seconds 6] [--flags "--v8-flags=--no-memory-reducer"]
 *
 * PostgreSQL as the bench's (BENCH_DATABASE_URL, DATABASE_URL, else
 * postgres://postgres@127.0.0.1:5432/postgres): a database of its own,
 * dropped at the end. Prints a Markdown table; writes nothing.
 */
import { sleep, spawnService } from "../support/process.ts";
import { seedUsers } from "../support/seed.ts";
import { cpuSeconds } from "./proc.ts";
import { scratchDatabase, sessionToken } from "./setup.ts";
import { runWrk } from "./wrk.ts";

const arg = (name: string) => {
  const i = Deno.args.indexOf(`--${name}`);
  return i < 0 ? undefined : Deno.args[i + 1];
};
const users = Number(arg("users") ?? 1000);
const listSeconds = Number(arg("lists") ?? 20);
const idleSeconds = Number(arg("idle") ?? 10);
const seconds = Number(arg("seconds") ?? 6);
const variants = ["", arg("flags") ?? "--v8-flags=--no-memory-reducer"];
const ADMIN = { username: "idle-admin", password: "idle-admin-password" };

await using db = await scratchDatabase("ua_idle");
const env = {
  DATABASE_URL: db.url,
  DATABASE_POOL_MAX: "10",
  ADMIN_USERNAME: ADMIN.username,
  ADMIN_PASSWORD: ADMIN.password,
};
const start = (flags: string) =>
  spawnService(env, flags.split(" ").filter(Boolean));

/** CPU µs per request of one wrk run of `secs` seconds. */
async function load(
  service: { baseUrl: string; pid: number },
  sid: string,
  path: string,
  secs: number,
) {
  const before = await cpuSeconds([service.pid]);
  const r = await runWrk({
    url: service.baseUrl + path,
    sid,
    connections: 10,
    durationSeconds: secs,
    env: {},
  });
  if (r.errors) throw new Error(`${path}: ${r.errors} errors`);
  const cpu = (await cpuSeconds([service.pid])) - before;
  return { cpuUs: cpu * 1e6 / r.requests };
}

{
  // The first start migrates and creates the admin.
  await using _ = await start("");
}
await seedUsers(db.sql, users);

const rows: string[] = [];
for (const flags of variants) {
  await using service = await start(flags);
  const sid = await sessionToken(service.baseUrl, ADMIN);
  if (listSeconds > 0) await load(service, sid, "/api/users", listSeconds);
  await load(service, sid, "/api/auth/me", 7);
  const before = [];
  for (let i = 0; i < 3; i++) {
    before.push(await load(service, sid, "/api/auth/me", 1));
  }
  await sleep(idleSeconds * 1000);
  const after = [];
  for (let i = 0; i < seconds; i++) {
    after.push(await load(service, sid, "/api/auth/me", 1));
  }
  const cells = (runs: { cpuUs: number }[]) =>
    runs.map((r) => r.cpuUs.toFixed(0)).join(", ");
  rows.push(
    `| \`deno run${flags ? ` ${flags}` : ""}\` | ${cells(before)} | ${
      cells(after)
    } |`,
  );
  console.log(rows.at(-1));
}
console.log(
  [
    "",
    `${users} users; ${listSeconds} s of full lists, then GET /api/auth/me (wrk, 10 connections); CPU µs per request, second by second`,
    "",
    `| service | the last 3 s before ${idleSeconds} s idle | the first ${seconds} s after |`,
    "|---|---|---|",
    ...rows,
  ].join("\n"),
);
