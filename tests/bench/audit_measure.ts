/**
 * Where an audit record's cost goes, measured apart from the full bench.
 *
 *   deno run -A tests/bench/audit_measure.ts [store|wrk|all] [--rounds 3]
 *     [--duration 5] [--connections 10] [--url postgres://postgres@127.0.0.1:5432/postgres]
 *
 * store: in this process, through the store: appends alone beside one-insert
 * transactions, then PATCH role unchanged (no record) beside PATCH role
 * alternating (a record each) on one user, 1 and 10 at once, then the
 * verify walk. wrk: the service as a process, driven by wrk with the
 * bench's script (tests/bench/wrk.lua): the same two PATCH loads, side by
 * side, `--rounds` times in alternating order (the order's drift cancels),
 * with the load average before each round.
 *
 * Creates and drops a database of its own on that server.
 */
import postgres from "postgres";
import { hash } from "@node-rs/bcrypt";
import { auditEvents, NO_REQUEST } from "../../src/audit/events.ts";
import { verifyChain } from "../../src/audit/verify.ts";
import { loadConfig } from "../../src/config.ts";
import { openDatabase } from "../../src/db/database.ts";
import { createStore, type WriteCaller } from "../../src/db/store.ts";
import { spawnService } from "../support/process.ts";

const flag = (name: string, fallback: string) => {
  const i = Deno.args.indexOf(`--${name}`);
  return i < 0 ? fallback : Deno.args[i + 1];
};
const mode = Deno.args[0]?.startsWith("--") ? "all" : Deno.args[0] ?? "all";
const rounds = Number(flag("rounds", "3"));
const duration = Number(flag("duration", "5"));
const connections = Number(flag("connections", "10"));
const server = new URL(
  flag("url", "postgres://postgres@127.0.0.1:5432/postgres"),
);
const HERE = new URL("./", import.meta.url);
const ADMIN = { username: "measure-admin", password: "measure-password" };

const loadAverage = async () =>
  (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ");

const rate = async (
  n: number,
  concurrency: number,
  write: (i: number) => Promise<unknown>,
) => {
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) await write(next++);
    }),
  );
  return Math.round(n / ((performance.now() - started) / 1000));
};

async function storeFigures(databaseUrl: string) {
  const db = await openDatabase(loadConfig({ DATABASE_URL: databaseUrl }));
  try {
    const store = createStore(db.sql);
    await db.sql`
      create table scratch (id serial primary key, t timestamptz default now())`;
    const event = auditEvents.roleChanged(
      { id: 1, username: "a" },
      { id: 2, username: "b" },
      "viewer",
      "admin",
      { requestId: "r", clientAddress: "127.0.0.1" },
    );
    const passwordHash = await hash("measure-password", 4);
    const admin = await store.users.createFirst(
      {
        ...ADMIN,
        name: "A",
        email: "a@example.com",
        role: "admin",
        passwordHash,
      },
      "generated",
    );
    const target = await store.users.createFirst(
      {
        username: "t",
        name: "T",
        email: "t@example.com",
        role: "viewer",
        passwordHash,
      },
      "generated",
    );
    if (typeof admin === "string" || typeof target === "string") {
      throw new Error("seed failed");
    }
    const token = crypto.getRandomValues(new Uint8Array(32));
    await store.sessions.create(
      token,
      { ...admin, passwordVersion: 0 },
      3600,
      NO_REQUEST,
    );
    const caller: WriteCaller = {
      id: admin.id,
      sessionHash: token,
      context: { requestId: "r", clientAddress: "127.0.0.1" },
    };
    const N = 3000;
    for (const concurrency of [1, 10]) {
      const appends = await rate(
        N,
        concurrency,
        () => store.audit.record(event),
      );
      const writes = await rate(
        N,
        concurrency,
        () => db.sql.begin((tx) => tx`insert into scratch default values`),
      );
      const same = await rate(
        N,
        concurrency,
        () => store.users.update(target.id, { role: "viewer" }, caller),
      );
      const alternating = await rate(
        N,
        concurrency,
        (i) =>
          store.users.update(
            target.id,
            { role: i % 2 ? "viewer" : "admin" },
            caller,
          ),
      );
      console.log(
        `${concurrency} at once: ${appends} appends/s, ${writes} one-insert transactions/s (${
          (appends / writes).toFixed(2)
        }); PATCH-like ${alternating}/s with a record, ${same}/s without (${
          (alternating / same).toFixed(2)
        }) [load ${await loadAverage()}]`,
      );
    }
    const started = performance.now();
    const result = await store.audit.walk(verifyChain);
    console.log(
      `verify: ${
        result.ok ? result.count : JSON.stringify(result)
      } records in ${Math.round(performance.now() - started)} ms`,
    );
  } finally {
    await db.close();
  }
}

async function wrk(
  baseUrl: string,
  sid: string,
  path: string,
  env: Record<string, string>,
  seconds: number,
) {
  const out = await new Deno.Command("wrk", {
    args: [
      "-t",
      String(Math.min(2, connections)),
      "-c",
      String(connections),
      "-d",
      `${seconds}s`,
      "--timeout",
      "10s",
      "-s",
      new URL("wrk.lua", HERE).pathname,
      "-H",
      `Cookie: sid=${sid}`,
      baseUrl + path,
    ],
    env: { BENCH_METHOD: "PATCH", ...env },
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  const line = text.split("\n").find((l) => l.startsWith("BENCH "));
  if (!line) throw new Error(`wrk: ${text}`);
  const r = JSON.parse(line.slice(6));
  const errors = r.non2xx + r.connectErrors + r.readErrors + r.writeErrors +
    r.timeouts;
  if (errors) throw new Error(`wrk: ${errors} errors`);
  return { rps: r.requests / (r.durationUs / 1e6), p50Ms: r.p50Us / 1000 };
}

async function wrkFigures(databaseUrl: string) {
  await using service = await spawnService({
    DATABASE_URL: databaseUrl,
    ADMIN_USERNAME: ADMIN.username,
    ADMIN_PASSWORD: ADMIN.password,
  });
  const login = await fetch(`${service.baseUrl}/api/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(ADMIN),
  });
  await login.body?.cancel();
  const sid = /sid=([^;]+)/.exec(login.headers.get("set-cookie") ?? "")![1];
  const created = await fetch(`${service.baseUrl}/api/users`, {
    method: "POST",
    headers: { "content-type": "application/json", cookie: `sid=${sid}` },
    body: JSON.stringify({
      username: "someone",
      name: "Someone",
      email: "someone@example.com",
      password: "someone-password",
      role: "viewer",
    }),
  });
  const { id } = await created.json();
  const path = `/api/users/${id}`;
  const loads = {
    unchanged: { BENCH_BODY: JSON.stringify({ role: "viewer" }) },
    alternating: {
      BENCH_ALTERNATE: [
        JSON.stringify({ role: "admin" }),
        JSON.stringify({ role: "viewer" }),
      ].join("\n"),
    },
  };
  const ratios: number[] = [];
  for (let round = 1; round <= rounds; round++) {
    const load = await loadAverage();
    const order = round % 2
      ? (["unchanged", "alternating"] as const)
      : (["alternating", "unchanged"] as const);
    const got: Record<string, { rps: number; p50Ms: number }> = {};
    for (const name of order) {
      await wrk(service.baseUrl, sid, path, loads[name], 1);
      got[name] = await wrk(service.baseUrl, sid, path, loads[name], duration);
    }
    const ratio = got.alternating.rps / got.unchanged.rps;
    ratios.push(ratio);
    console.log(
      `round ${round} [load ${load}]: PATCH role alternating (a record each) ${
        got.alternating.rps.toFixed(0)
      } req/s p50 ${got.alternating.p50Ms.toFixed(1)} ms, unchanged (none) ${
        got.unchanged.rps.toFixed(0)
      } req/s p50 ${got.unchanged.p50Ms.toFixed(1)} ms: ratio ${
        ratio.toFixed(2)
      }`,
    );
  }
  const sorted = [...ratios].sort((a, b) => a - b);
  console.log(
    `ratio over ${rounds} rounds: median ${
      sorted[Math.floor(sorted.length / 2)].toFixed(2)
    }, min ${sorted[0].toFixed(2)}, max ${sorted.at(-1)!.toFixed(2)}`,
  );
}

/** A database of its own on `server` for `run`, dropped afterwards. */
async function withDatabase(run: (url: string) => Promise<void>) {
  const name = `audit_measure_${crypto.randomUUID().replaceAll("-", "")}`;
  const owner = postgres(server.href, { max: 1, onnotice: () => {} });
  await owner`create database ${owner(name)}`;
  const url = new URL(server.href);
  url.pathname = `/${name}`;
  try {
    await run(url.href);
  } finally {
    await owner`drop database ${owner(name)} with (force)`;
    await owner.end();
  }
}

if (mode === "store" || mode === "all") await withDatabase(storeFigures);
if (mode === "wrk" || mode === "all") await withDatabase(wrkFigures);
