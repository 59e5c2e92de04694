/**
 * `deno task bench`: the service beside its raw floor (tests/bench/floor.ts),
 * on one PostgreSQL, driven by wrk in a separate process over loopback.
 * Prints per scenario requests/s, p50/p99 latency, peak RSS and the ratio
 * service/floor, and writes tests/bench/RESULTS.md.
 *
 *   deno task bench [--users 1000] [--stream-users 100000]
 *                   [--million-users 1000000] [--duration 3] [--rounds 9]
 *                   [--fast-duration 1] [--fast-rounds 25] [--warmup 10]
 *                   [--connections 10] [--out tests/bench/RESULTS.md]
 *   deno task bench --sse [--sse-streams 100] [--sse-records 30]
 *
 * `--sse` measures only the change feed's fan-out (see `sseFanOut`), prints
 * it and writes nothing.
 *
 * A ratio (the service beside its floor, PATCH with its audit record beside
 * the same PATCH with the database dropping the record) is measured in
 * rounds, taking turns (the order swaps each round): `--fast-rounds` (25)
 * of `--fast-duration` (1) seconds a side for requests of milliseconds,
 * `--rounds` (9) of `--duration` (3) for the bcrypt pairs and the long list,
 * after a warm-up of `--warmup` seconds a side, taken in turns too: it
 * is the median of the rounds' ratios, and the table shows each side's
 * median round. One run of each, one after the other, moved by 20% and more
 * on this shared machine.
 *
 *   deno task bench --keys [--duration 3] [--rounds 9] [--warmup 10]
 *
 * `--keys` measures only GET /api/auth/me with an API key beside the same
 * with the cookie, and POST /api/users with an Idempotency-Key beside
 * without (each target 0.9), and prints them; RESULTS.md is not written.
 *
 *   deno task bench --floor [--users 1000] [--fast-duration 1]
 *                   [--fast-rounds 25] [--warmup 10] [--connections 10]
 *
 * `--floor` measures only the two pairs with the floor, GET /api/users (the
 * whole list of `--users` users) and GET /api/auth/me, the service with its
 * defaults as in the full run, and prints them; in RESULTS.md it rewrites
 * only those two scenarios' lines (their table rows, targets and notes).
 *
 *   deno task bench --mfa [--duration 3] [--rounds 9] [--warmup 10]
 *
 * `--mfa` measures POST /api/auth/login with a TOTP code (a user with a
 * factor, in one request) beside the same without one (a user without),
 * and GET /api/auth/me with a second-factored session beside a session of
 * a user without a factor, in turns; prints them (RESULTS.md untouched).
 * Targets: a code costs at most 1 ms more a login, and `me` is the same.
 *
 *   deno task bench --delegation [--users 1000] [--fast-duration 1]
 *                   [--fast-rounds 25] [--warmup 10]
 *
 * `--delegation` measures GET /api/auth/me and a page of GET /api/users
 * for a person holding five roles through three groups beside an admin,
 * in turns, and prints them (target: at most 5% more cost, ≥ 0.95).
 *
 *   deno task bench --webhooks [--duration 3] [--rounds 9] [--warmup 10]
 *
 * `--webhooks` measures PATCH (role flips: an audit record each) with 11
 * webhook endpoints attached, 10 of them hanging until the delivery's
 * timeout, beside the same PATCH with none, in turns, and the delivery
 * latency from a record's time (written in its transaction) to its arrival
 * at the healthy receiver in this process, for paced writes and under
 * wrk's load. It writes the section "Webhooks beside hanging receivers" of
 * RESULTS.md, kept by the other runs as "A million users" is.
 *
 *   deno task bench --access-log [--users 1000] [--fast-duration 1]
 *                   [--fast-rounds 25] [--warmup 10] [--connections 10]
 *
 * `--access-log` measures only GET /api/auth/me on three processes in
 * turns: the service with its defaults (`LOG_LEVEL` `info`: an access log
 * line per request, its stdout read by the bench as a log collector would),
 * the same service with `LOG_LEVEL=warn` (no access log) and the floor. It
 * prints each one's median req/s and CPU per request, the log's cost (CPU
 * per request with it over without) and service/floor; then the log's cost
 * measured again inside one process, free of two processes' differences
 * (`logCostInProcess`). RESULTS.md is not written.
 *
 *   deno task bench --million [--million-users 1000000] [--duration 5]
 *
 * `--million` measures the service alone on `--million-users` users and as
 * many audit records (seeded in SQL), 8 connections: a request of each kind
 * a client sends, with p99 < 50 ms and no error answers as the target, and
 * the streamed full list. It writes its table as the section "A million
 * users" of RESULTS.md, kept by the other runs (after their marker).
 *
 *   deno task bench --against <dir> [--users 1000] [--duration 5]
 *                   [--rounds 5] [--warmup 10] [--connections 10]
 *                   [--out tests/bench/RESULTS.md]
 *
 * `--against <dir>` measures this checkout's service beside the service of
 * another checkout of the project at `<dir>` (an older revision, or this
 * tree with one change, e.g. an older vendor/postgres; `deno install` done
 * there), so that the figures of the two stand in one table.
 * Each side gets a database of its own, migrated by its own service and
 * seeded to `--users` users; GET /api/auth/me, GET /api/users/:id, GET
 * /api/users and PATCH role flips are measured on both in turns, as a
 * ratio is (above). It prints each side's median req/s, p50, p99 and CPU
 * per request, and this/other of req/s and of CPU per request, and writes
 * them, with each checkout's last commit and `git status --short`, as the
 * section "Side by side with another checkout" of RESULTS.md, kept by the
 * other runs as "A million users" is.
 *
 * PostgreSQL: BENCH_DATABASE_URL, else DATABASE_URL, else
 * postgres://postgres@127.0.0.1:5432/postgres; the bench creates a database
 * of its own there and drops it at the end.
 */
import type { Sql } from "postgres";
import { hash } from "@node-rs/bcrypt";
import { Secret, TOTP } from "otpauth";
import {
  type Instance,
  spawnServer,
  spawnService,
} from "../support/process.ts";
import process from "node:process";
import { createApp } from "../../src/app.ts";
import { uploadChunks } from "../../src/cli/import.ts";
import { loadConfig } from "../../src/config.ts";
import { openDatabase } from "../../src/db/database.ts";
import { createStore } from "../../src/db/store.ts";
import { LIST_BATCH } from "../../src/db/user-list.ts";
import { bufferedLines, createLogger } from "../../src/log.ts";
import { encodeCursor } from "../../src/users/listing.ts";
import { seedAudit, seedUsers } from "../support/seed.ts";
import { cpuSeconds } from "./proc.ts";
import { inTurns } from "./turns.ts";
import { scratchDatabase, sessionToken } from "./setup.ts";
import { runWrk } from "./wrk.ts";

const HERE = new URL("./", import.meta.url);
const ADMIN = { username: "bench-admin", password: "bench-admin-password" };

// ---------------------------------------------------------------- options

function option(name: string, fallback: number): number {
  const i = Deno.args.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const value = Number(Deno.args[i + 1]);
  if (!Number.isInteger(value) || value < 0) {
    throw new Error(`--${name} needs a whole number`);
  }
  return value;
}
/** The word after `--name`, if the option is given. */
function textOption(name: string): string | undefined {
  const i = Deno.args.indexOf(`--${name}`);
  if (i < 0) return undefined;
  const value = Deno.args[i + 1];
  if (value === undefined || value.startsWith("--")) {
    throw new Error(`--${name} needs a value`);
  }
  return value;
}
const opts = {
  users: option("users", 1000),
  streamUsers: option("stream-users", 100_000),
  millionUsers: option("million-users", 1_000_000),
  importUsers: option("import-users", 100_000),
  // Many short rounds: the host's speed drifts within seconds, and a ratio
  // is only as good as its two sides' sharing the same drift. The million's
  // rows are single runs, each longer.
  duration: option("duration", Deno.args.includes("--million") ? 5 : 3),
  rounds: option("rounds", 9),
  // Pairs of requests that take milliseconds: shorter, more rounds still.
  fastDuration: option("fast-duration", 1),
  fastRounds: option("fast-rounds", 25),
  warmup: option("warmup", 10),
  connections: option("connections", 10),
  sseStreams: option("sse-streams", 100),
  sseRecords: option("sse-records", 30),
  out: textOption("out") ?? new URL("RESULTS.md", HERE).pathname,
  against: textOption("against"),
};

// ---------------------------------------------------------------- helpers

const decoder = new TextDecoder();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mib = (kib: number) => kib / 1024;

async function run(cmd: string, args: string[], env?: Record<string, string>) {
  const out = await new Deno.Command(cmd, { args, env, stderr: "piped" })
    .output();
  return {
    ok: out.success,
    stdout: decoder.decode(out.stdout),
    stderr: decoder.decode(out.stderr),
  };
}

/** wrk on PATH, else installed with apt-get; says which. */
async function findWrk(): Promise<string> {
  const which = await run("sh", ["-c", "command -v wrk"]);
  if (which.ok) {
    const path = which.stdout.trim();
    console.log(`load generator: ${path} (found on PATH)`);
    return path;
  }
  console.log(
    "load generator: wrk not on PATH; installing Debian's package with `apt-get install -y wrk`",
  );
  const install = await run("sh", [
    "-c",
    "apt-get install -y wrk || (apt-get update && apt-get install -y wrk)",
  ]);
  if (!install.ok) {
    throw new Error(
      `could not install wrk (${install.stderr.trim()}); install it (apt-get install wrk) and rerun`,
    );
  }
  return "wrk";
}

/** Resident set now and peak since the last reset, in KiB, from /proc. */
async function memory(pid: number): Promise<{ rss: number; hwm: number }> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  const kib = (key: string) =>
    Number(new RegExp(`^${key}:\\s+(\\d+)`, "m").exec(status)?.[1] ?? 0);
  return { rss: kib("VmRSS"), hwm: kib("VmHWM") };
}

/** Resets a process's peak RSS (VmHWM) to its current RSS. */
async function resetPeak(pid: number) {
  await Deno.writeTextFile(`/proc/${pid}/clear_refs`, "5");
}

type Proc = Instance;

/**
 * The service with the bench's admin: this checkout's, or with `cwd` the
 * one of the checkout there (its own main.ts, config and node_modules).
 */
const startService = (env: Record<string, string>, cwd?: string) => {
  const withAdmin = {
    ADMIN_USERNAME: ADMIN.username,
    ADMIN_PASSWORD: ADMIN.password,
    ...env,
  };
  return cwd === undefined ? spawnService(withAdmin) : spawnServer(
    ["run", "-A", "main.ts"],
    { HOST: "127.0.0.1", LOG_LEVEL: "warn", ...withAdmin },
    60_000,
    cwd,
  );
};

/**
 * This checkout's service with its defaults but the bench's admin
 * (`LOG_LEVEL` `info`, the default: an access log line per request), its
 * stdout read and dropped as a log collector would take it.
 */
const startDefaults = (databaseUrl: string) =>
  spawnServer(
    ["run", "-A", "main.ts"],
    {
      HOST: "127.0.0.1",
      LOG_LEVEL: "info",
      ADMIN_USERNAME: ADMIN.username,
      ADMIN_PASSWORD: ADMIN.password,
      DATABASE_URL: databaseUrl,
    },
    60_000,
    undefined,
    { keepLines: false },
  );

/** The machine's `uptime` line: its load averages. */
const uptime = async () => (await run("uptime", [])).stdout.trim();

/** 200 viewers, the targets of the PATCH scenarios. */
const viewerTargets = async (sql: Sql) =>
  (await sql<{ id: number }[]>`
    select id from users where role = 'viewer' order by id limit 200`)
    .map((r) => r.id);

/** Sets the targets back to viewers, so role flips start from one role. */
const asViewers = (sql: Sql, targets: number[]) =>
  sql`update users set role = 'viewer' where id in ${sql(targets)}`;

const startFloor = (databaseUrl: string) =>
  spawnServer(["run", "-A", new URL("floor.ts", HERE).pathname], {
    DATABASE_URL: databaseUrl,
    // The floor's list statements take the service's batch, so both plan alike.
    LIST_BATCH: String(LIST_BATCH),
  });

const login = (baseUrl: string) => sessionToken(baseUrl, ADMIN);

/** The list's current ETag, and proof that it answers 304. */
async function listTag(target: Proc, sid: string): Promise<string> {
  const headers = { cookie: `sid=${sid}` };
  const res = await fetch(`${target.baseUrl}/api/users`, { headers });
  await res.body?.cancel();
  const tag = res.headers.get("etag");
  if (!tag) throw new Error("GET /api/users answered no ETag");
  const again = await fetch(`${target.baseUrl}/api/users`, {
    headers: { ...headers, "if-none-match": tag },
  });
  await again.body?.cancel();
  if (again.status !== 304) throw new Error(`If-None-Match: ${again.status}`);
  return tag;
}

/** Adds users until there are `total` (tests/support/seed.ts), timed. */
async function seed(sql: Sql, total: number, options = {}) {
  const started = performance.now();
  const { added } = await seedUsers(sql, total, options);
  return { added, ms: performance.now() - started };
}

/** Parallel bcrypt hashes over all cores for `seconds`: the ceiling for POST /api/users and login. */
async function hashingRate(seconds: number): Promise<number> {
  const until = performance.now() + seconds * 1000;
  let count = 0;
  const worker = async () => {
    while (performance.now() < until) {
      await hash("bench-password", 10);
      count++;
    }
  };
  const started = performance.now();
  await Promise.all(
    Array.from({ length: navigator.hardwareConcurrency }, worker),
  );
  return count / ((performance.now() - started) / 1000);
}

// ---------------------------------------------------------------- wrk

interface Measured {
  requests: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  /** Peak RSS of the server process during the run, MiB. */
  peakMiB: number;
  /** The server process's CPU time during the run over its requests, µs. */
  cpuUsPerRequest: number;
  errors: number;
  /** Audit records the service wrote during the run. */
  auditRecords?: number;
}

interface Load {
  path: string;
  method?: string;
  body?: string;
  create?: string;
  /** With `create`: each creation with an Idempotency-Key of its own. */
  idempotent?: boolean;
  /** Extra request headers, `Name: value`. */
  headers?: string[];
  /** Two bodies that requests alternate (instead of `body`). */
  alternate?: [string, string];
  /** Ids appended to `path`, each thread cycling through its own (wrk.lua). */
  targets?: number[];
  /** Ids from this one on appended to `path`, each once (wrk.lua). */
  targetFirst?: number;
  connections?: number;
  duration?: number;
  /** Another caller's session (the bench's admin's otherwise). */
  sid?: string;
}

/**
 * A switch in the bench's database that drops every audit record the
 * service writes while `keep(false)`: a trigger on audit_pending that
 * returns null then. The trigger runs for every record either way, so
 * both sides of a comparison pay for it alike; the bench-only table and
 * trigger go with `remove`.
 */
async function recordSwitch(sql: Sql) {
  await sql`create table bench_keep_records (keep boolean not null)`;
  await sql`insert into bench_keep_records values (true)`;
  await sql`
    create function bench_keep_records() returns trigger
    language plpgsql as $$
    begin
      if (select keep from bench_keep_records) then return new; end if;
      return null;
    end $$`;
  await sql`
    create trigger bench_keep_records before insert on audit_pending
    for each row execute function bench_keep_records()`;
  return {
    keep: async (keep: boolean) => {
      await sql`update bench_keep_records set keep = ${keep}`;
    },
    remove: async () => {
      await sql`drop trigger bench_keep_records on audit_pending`;
      await sql`drop function bench_keep_records()`;
      await sql`drop table bench_keep_records`;
    },
  };
}

/**
 * PATCH role flips on `targets` (viewerTargets), each wrk thread on users
 * of its own so no two requests race on one user, admin and viewer bodies
 * alternating: from viewers (asViewers), an audit record each.
 */
const roleFlips = (targets: number[]): Load => ({
  path: "/api/users/",
  method: "PATCH",
  targets,
  alternate: [
    JSON.stringify({ role: "admin" }),
    JSON.stringify({ role: "viewer" }),
  ],
});

async function wrk(
  wrkPath: string,
  target: Proc,
  sid: string,
  load: Load,
): Promise<Measured> {
  const env: Record<string, string> = { BENCH_METHOD: load.method ?? "GET" };
  if (load.body) env.BENCH_BODY = load.body;
  if (load.create) env.BENCH_CREATE = load.create;
  if (load.idempotent) env.BENCH_IDEMPOTENT = "1";
  if (load.alternate) env.BENCH_ALTERNATE = load.alternate.join("\n");
  if (load.targets) env.BENCH_TARGETS = load.targets.join(",");
  if (load.targetFirst !== undefined) {
    env.BENCH_TARGET_FIRST = String(load.targetFirst);
  }
  const connections = load.connections ?? opts.connections;
  await resetPeak(target.pid);
  const cpuBefore = await cpuSeconds([target.pid]);
  const r = await runWrk({
    wrkPath,
    url: target.baseUrl + load.path,
    sid,
    connections,
    durationSeconds: load.duration ?? opts.duration,
    headers: load.headers,
    env,
  });
  const { hwm } = await memory(target.pid);
  const cpu = await cpuSeconds([target.pid]) - cpuBefore;
  return {
    requests: r.requests,
    cpuUsPerRequest: cpu * 1e6 / Math.max(1, r.requests),
    rps: r.requests / (r.durationUs / 1e6),
    p50Ms: r.p50Us / 1000,
    p99Ms: r.p99Us / 1000,
    peakMiB: mib(hwm),
    errors: r.errors,
  };
}

// ---------------------------------------------------------------- streaming

interface Stream {
  /** Users in the body (its `{"id":` openings). */
  count: number;
  /** Whether the body is a whole array (ends with `]`). */
  complete: boolean;
  firstByteMs: number;
  totalMs: number;
  bytes: number;
  idleMiB: number;
  peakMiB: number;
}

/** The server's RSS growth during the read: one that shrank grew by 0 (not "-0"). */
const growthMiB = (m: Stream) => Math.max(0, m.peakMiB - m.idleMiB);

/** One GET /api/users read to the end: time to the first body byte, and the server's RSS growth. */
async function streamOnce(target: Proc, sid: string): Promise<Stream> {
  await sleep(500);
  const idle = await memory(target.pid);
  await resetPeak(target.pid);
  const started = performance.now();
  const res = await fetch(`${target.baseUrl}/api/users`, {
    headers: { cookie: `sid=${sid}` },
  });
  const reader = res.body!.getReader();
  let bytes = 0;
  let firstByteMs = 0;
  let count = 0;
  let last = 0;
  const decoder = new TextDecoder();
  let carry = "";
  while (true) {
    const { value, done } = await reader.read();
    if (done) break;
    if (bytes === 0) firstByteMs = performance.now() - started;
    bytes += value.length;
    last = value[value.length - 1];
    const text = carry + decoder.decode(value, { stream: true });
    for (let at = text.indexOf('{"id":'); at >= 0;) {
      count++;
      at = text.indexOf('{"id":', at + 6);
    }
    carry = text.slice(-5);
  }
  const totalMs = performance.now() - started;
  const { hwm } = await memory(target.pid);
  return {
    count,
    complete: last === 0x5d, // "]"
    firstByteMs,
    totalMs,
    bytes,
    idleMiB: mib(idle.rss),
    peakMiB: mib(hwm),
  };
}

/**
 * Headers whose values may differ between the two: the date, and how the
 * body is framed (the service streams a long list chunked, the floor sends
 * it whole). The request id must be there on both, its value is each one's.
 */
const FRAMING = new Set(["date", "content-length", "transfer-encoding"]);
const REQUEST_ID = "x-request-id";

function comparableHeaders(res: Response): string[] {
  return [...res.headers].flatMap(([name, value]) =>
    FRAMING.has(name)
      ? []
      : [`${name}: ${name === REQUEST_ID ? "(present)" : value}`]
  ).sort();
}

/**
 * Service and floor give the same answer to one request: status, body byte
 * for byte, and headers (comparableHeaders). Returns the body.
 */
async function sameAnswer(
  a: Proc,
  b: Proc,
  sid: string,
  path: string,
  headers: Record<string, string> = {},
) {
  const get = async (p: Proc) => {
    const res = await fetch(p.baseUrl + path, {
      headers: { cookie: `sid=${sid}`, ...headers },
    });
    return {
      status: res.status,
      headers: comparableHeaders(res),
      body: await res.text(),
    };
  };
  const [x, y] = await Promise.all([get(a), get(b)]);
  const differ = (what: string, s: unknown, f: unknown) => {
    throw new Error(
      `${path}: service and floor answer different ${what}\n` +
        `service: ${JSON.stringify(s)}\nfloor:   ${JSON.stringify(f)}`,
    );
  };
  if (x.status !== y.status) differ("statuses", x.status, y.status);
  if (x.body !== y.body) differ("bodies", x.body.length, y.body.length);
  if (x.headers.join("\n") !== y.headers.join("\n")) {
    differ("headers", x.headers, y.headers);
  }
  return x.body;
}

// ---------------------------------------------------------------- main

interface Row {
  scenario: string;
  service: Measured;
  floor?: Measured;
  /** Median of the rounds' service/floor ratios, their lowest and highest, and each. */
  ratio?: { median: number; low: number; high: number; rounds: number[] };
  note?: string;
}

const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/** The run with the median req/s, its req/s the median of all (even counts). */
function medianRun(runs: Measured[]): Measured {
  const sorted = [...runs].sort((a, b) => a.rps - b.rps);
  return {
    ...sorted[(sorted.length - 1) >> 1],
    rps: median(runs.map((r) => r.rps)),
  };
}

/** The rounds' ratios of a pair: their median, lowest and highest. */
const ratioOf = (rounds: number[]) => ({
  median: median(rounds),
  low: Math.min(...rounds),
  high: Math.max(...rounds),
  rounds,
});

/** How a pair is measured: rounds of `duration` seconds a side. */
interface Slices {
  rounds: number;
  duration: number;
}
/** For loads whose requests take a second or less between them. */
const SLICES: Slices = { rounds: opts.rounds, duration: opts.duration };
/** For requests of milliseconds: many short rounds (`--fast-rounds`, `--fast-duration`). */
const FAST: Slices = { rounds: opts.fastRounds, duration: opts.fastDuration };

/**
 * Two loads measured in turns (turns.ts): the ratio a/b of each round, and
 * their median. By default the two warm up for `--warmup` seconds each,
 * long enough for the JIT, in turns as the rounds are: a side left idle
 * through the other's whole warm-up would come to the first round with its
 * heap shrunk by V8's memory reducer, and pay alone for growing it again
 * (RESULTS.md, "How to read these figures").
 */
async function paired(
  a: (over?: Partial<Load>) => Promise<Measured>,
  b: (over?: Partial<Load>) => Promise<Measured>,
  warmUp?: () => Promise<unknown>,
  { rounds: n, duration }: Slices = SLICES,
) {
  const sides = { a: () => a({ duration }), b: () => b({ duration }) };
  const { a: as, b: bs } = await inTurns(
    sides,
    n,
    warmUp ??
      (() => inTurns(sides, Math.ceil(opts.warmup / duration), async () => {})),
  );
  const rounds = as.map((x, i) => x.rps / bs[i].rps);
  return {
    a: medianRun(as),
    b: medianRun(bs),
    as,
    bs,
    ratio: ratioOf(rounds),
  };
}

/** CPU µs per request, the median of the rounds. */
const cpuPerRequest = (runs: Measured[]) =>
  median(runs.map((m) => m.cpuUsPerRequest));

/**
 * What each request cost the two sides in CPU, median of the rounds, and
 * b/a: steadier than the req/s ratio, which moves with whatever else the
 * machine runs during a round.
 */
const cpuNote = (
  as: Measured[],
  bs: Measured[],
  a: string,
  b: string,
  /** Whether to say how it is measured (a section's first line may say it once). */
  how = true,
) => {
  const ca = cpuPerRequest(as);
  const cb = cpuPerRequest(bs);
  return `CPU per request${
    how
      ? " (the process's user + system time over its requests, median of the rounds)"
      : ""
  }: ${a} ${fmt(ca)} µs, ${b} ${fmt(cb)} µs, ${b}/${a} ${(cb / ca).toFixed(2)}`;
};

/** The rounds' ratios as the notes list them. */
const roundList = (ratio: { rounds: number[] }) =>
  ratio.rounds.map((r) => r.toFixed(2)).join(", ");

/** The rounds' lowest and highest ratio, as the targets give them. */
const roundRange = (ratio: { low: number; high: number }) =>
  `rounds ${ratio.low.toFixed(2)}–${ratio.high.toFixed(2)}`;

const fmt = (n: number, digits = 0) =>
  n.toLocaleString("en-US", {
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
  });

function table(rows: Row[]): string {
  const lines = [
    "| scenario | service req/s | p50 ms | p99 ms | peak RSS MiB | floor req/s | floor p50 ms | floor p99 ms | floor peak RSS MiB | service/floor |",
    "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
  ];
  for (const { scenario, service: s, floor: f, ratio, note } of rows) {
    const errs = s.errors ? ` (${s.errors} errors)` : "";
    lines.push(
      `| ${scenario}${note ? ` ${note}` : ""}${errs} | ${fmt(s.rps)} | ${
        fmt(s.p50Ms, 1)
      } | ${fmt(s.p99Ms, 1)} | ${fmt(s.peakMiB)} | ${
        f
          ? `${fmt(f.rps)} | ${fmt(f.p50Ms, 1)} | ${fmt(f.p99Ms, 1)} | ${
            fmt(f.peakMiB)
          } | ${(ratio?.median ?? s.rps / f.rps).toFixed(2)}`
          : "— | — | — | — | —"
      } |`,
    );
  }
  return lines.join("\n");
}

async function main() {
  const wrkPath = await findWrk();
  const wrkVersion = (await run(wrkPath, ["-v"])).stdout.split("\n")[0].trim();
  const cores = navigator.hardwareConcurrency;
  const loadAverage = async () =>
    (await Deno.readTextFile("/proc/loadavg")).split(" ")[0];
  const loadAtStart = await loadAverage();
  console.log(
    `${cores} cores, ${Deno.version.deno}, ${opts.users} users, ${opts.connections} connections, ${opts.duration} s per scenario`,
  );

  await using db = await scratchDatabase("ua_bench");
  const { url: databaseUrl, sql } = db;
  const notes: string[] = [];
  const rows: Row[] = [];
  // First start migrates the empty database and creates the admin.
  {
    await using first = await startService({ DATABASE_URL: databaseUrl });
    notes.push(
      `first start on an empty PostgreSQL database (migrations + first admin, bcrypt included): ${
        fmt(first.readyMs)
      } ms`,
    );
  }
  const seeded = await seed(sql, opts.users);
  console.log(`seeded ${seeded.added} users in ${fmt(seeded.ms)} ms`);

  await using service = await startDefaults(databaseUrl);
  await using floor = await startFloor(databaseUrl);
  const startup = `start against the migrated PostgreSQL: ${
    fmt(service.readyMs)
  } ms from spawning \`deno run main.ts\` to its first HTTP answer`;
  notes.push(startup);
  console.log(startup);

  const sid = await login(service.baseUrl);
  await sameAnswer(service, floor, sid, "/api/users");
  await sameAnswer(service, floor, sid, "/api/auth/me");
  await sameAnswer(service, floor, sid, "/api/users", {
    "if-none-match": await listTag(service, sid),
  });
  console.log(
    "service and floor answer byte-identical bodies and the same headers",
  );

  const [{ id: someone }] = await sql<{ id: number }[]>`
      select id from users where role = 'viewer' order by id limit 1`;

  // Sealed into the chain or still pending: written either way.
  const auditRecords = async () =>
    (await sql<{ n: number }[]>`
        select (select count(*) from audit_events)::int +
          (select count(*) from audit_pending)::int as n`)[0].n;
  const measure = async (
    scenario: string,
    load: Load,
    withFloor: boolean,
    slices = FAST,
  ) => {
    say(`${scenario} ...`);
    let row: Row;
    if (withFloor) {
      const p = await paired(
        (over) => wrk(wrkPath, service, sid, { ...load, ...over }),
        (over) => wrk(wrkPath, floor, sid, { ...load, ...over }),
        undefined,
        slices,
      );
      row = { scenario, service: p.a, floor: p.b, ratio: p.ratio };
      notes.push(
        `${scenario}: service/floor in ${slices.rounds} rounds of ${slices.duration} s a side: ${
          roundList(p.ratio)
        } (median ${p.ratio.median.toFixed(2)}); ${
          cpuNote(p.as, p.bs, "service", "floor")
        }`,
      );
    } else {
      await wrk(wrkPath, service, sid, { ...load, duration: 1 });
      const recordsBefore = await auditRecords();
      const s = await wrk(wrkPath, service, sid, load);
      s.auditRecords = (await auditRecords()) - recordsBefore;
      row = { scenario, service: s };
    }
    rows.push(row);
    console.log(table([row]).split("\n")[2]);
    return row;
  };

  await measure(`GET /api/users (${fmt(opts.users)} users)`, {
    path: "/api/users",
  }, true);
  // A poller whose copy is current: If-None-Match with the list's ETag.
  const tag = await listTag(service, sid);
  await measure(
    `GET /api/users (${fmt(opts.users)} users) unchanged, If-None-Match -> 304`,
    { path: "/api/users", headers: [`If-None-Match: ${tag}`] },
    false,
  );
  await measure("GET /api/auth/me", { path: "/api/auth/me" }, true);
  await measure(
    "GET /api/users/:id",
    { path: `/api/users/${someone}` },
    false,
  );
  // The audit trail's cost: PATCH role flips on users of each wrk thread's
  // own, so no two requests race on one user, each writing a record, beside
  // the same flips with the database dropping each record (skipRecords):
  // the same requests, statements, row and index updates and list-version
  // write, without the record and what follows it (its seal, the change
  // feed's notice). Both start from viewers; the records each wrote are
  // counted.
  const patchTargets = await viewerTargets(sql);
  const flips = roleFlips(patchTargets);
  const records = await recordSwitch(sql);
  const patchRun = async (recorded: boolean, over?: Partial<Load>) => {
    await asViewers(sql, patchTargets);
    await records.keep(recorded);
    const before = await auditRecords();
    const m = await wrk(wrkPath, service, sid, { ...flips, ...over });
    m.auditRecords = (await auditRecords()) - before;
    return m;
  };
  say("PATCH /api/users/:id with and without its audit record, in turns ...");
  const patch = await paired(
    (over) => patchRun(true, over),
    (over) => patchRun(false, over),
    () => patchRun(true),
    FAST,
  );
  await records.remove();
  const perRequest = (runs: Measured[]) =>
    runs.reduce((n, r) => n + r.auditRecords!, 0) /
    runs.reduce((n, r) => n + r.requests, 0);
  const patchRows: Row[] = [
    {
      scenario:
        "PATCH /api/users/:id (role flips, the database dropping the records)",
      service: patch.b,
    },
    {
      scenario: "PATCH /api/users/:id (role flips: an audit record each)",
      service: patch.a,
    },
  ];
  rows.push(...patchRows);
  console.log(table(patchRows).split("\n").slice(2).join("\n"));
  const auditRatio = patch.ratio.median;
  notes.push(
    `audit trail: PATCH role flipping ${fmt(patch.a.rps)} req/s (${
      perRequest(patch.as).toFixed(2)
    } records per request) beside ${
      fmt(patch.b.rps)
    } req/s for the same PATCH with the database dropping its record (${
      perRequest(patch.bs).toFixed(2)
    } records per request): ${
      auditRatio.toFixed(2)
    }, median of ${FAST.rounds} rounds of ${FAST.duration} s a side (${
      roundList(patch.ratio)
    }; the target is 0.85); ${
      cpuNote(patch.as, patch.bs, "recorded", "dropped")
    }`,
  );
  // Requests that bcrypt bounds, beside the rate at which this process
  // hashes at cost 10 on all cores, in turns: each round's requests/s over
  // that round's hashes/s. `load` makes each run's (new names for creations).
  const bcryptBound = async (scenario: string, load: () => Load) => {
    say(`${scenario} beside bcrypt hashing on all cores, in turns ...`);
    const hashes: number[] = [];
    const requests: Measured[] = [];
    await inTurns(
      {
        hashes: async () => hashes.push(await hashingRate(opts.duration)),
        requests: async () =>
          requests.push(await wrk(wrkPath, service, sid, load())),
      },
      opts.rounds,
      () => wrk(wrkPath, service, sid, { ...load(), duration: 1 }),
    );
    const rounds = requests.map((r, i) => r.rps / hashes[i]);
    const row: Row = { scenario, service: medianRun(requests) };
    rows.push(row);
    console.log(table([row]).split("\n")[2]);
    notes.push(
      `${scenario}: its req/s over the hashes/s of bcrypt (cost 10, ${cores} cores, in the bench process) in ${opts.rounds} rounds: ${
        rounds.map((r) => r.toFixed(2)).join(", ")
      } (median ${median(rounds).toFixed(2)}); hashes/s ${
        hashes.map((h) => fmt(h, 1)).join(", ")
      }`,
    );
    return {
      row,
      hashes: median(hashes),
      ratio: ratioOf(rounds),
    };
  };
  let runs = 0;
  // Each run's creations under names of its own.
  const create = (): Load => ({
    path: "/api/users",
    method: "POST",
    create: `b${Date.now().toString(36)}${++runs}`,
    connections: 4,
  });
  const bcryptRows = [
    await bcryptBound("POST /api/auth/login (bcrypt)", () => ({
      path: "/api/auth/login",
      method: "POST",
      body: JSON.stringify(ADMIN),
      connections: 4,
    })),
    await bcryptBound("POST /api/users (bcrypt)", create),
  ];

  // Creations saturate the CPU with bcrypt while one connection polls
  // /health; both run together for a second first, so /health's own first
  // requests (its code not yet compiled) are not what the tail measures.
  say("POST /api/users (bcrypt) with GET /health beside it ...");
  const beside = (duration?: number) =>
    Promise.all([
      wrk(wrkPath, service, sid, { ...create(), duration }),
      wrk(wrkPath, service, sid, { path: "/health", connections: 1, duration }),
    ]);
  await beside(1);
  const [creating, health] = await beside();
  rows.push({
    scenario: "POST /api/users (bcrypt) with GET /health beside it",
    service: creating,
  });
  rows.push({
    scenario: "GET /health while POST /api/users saturates the CPU",
    service: health,
  });
  console.log(table(rows.slice(-2)).split("\n").slice(2).join("\n"));

  const keyed = await keyScenarios(wrkPath, service, sid);
  rows.push(...keyed.rows);
  notes.push(...keyed.notes);
  console.log(table(keyed.rows).split("\n").slice(2).join("\n"));

  // Streaming: the whole list at streamUsers, one request at a time.
  let streamRows: string[] = [];
  let millionRows: string[] = [];
  let streamed: Stream | undefined;
  if (opts.streamUsers > 0) {
    const more = await seed(sql, opts.streamUsers);
    console.log(
      `seeded up to ${fmt(opts.streamUsers)} users (+${more.added} in ${
        fmt(more.ms)
      } ms)`,
    );
    const body = await sameAnswer(service, floor, sid, "/api/users");
    const count = (JSON.parse(body) as unknown[]).length;
    const s = streamed = await streamOnce(service, sid);
    const f = await streamOnce(floor, sid);
    const line = (who: string, m: Stream) =>
      `| ${who} | ${fmt(count)} | ${fmt(m.bytes / 1024 / 1024, 1)} | ${
        fmt(m.firstByteMs)
      } | ${fmt(m.totalMs)} | ${fmt(m.idleMiB)} | ${fmt(m.peakMiB)} | ${
        fmt(growthMiB(m))
      } |`;
    streamRows = [
      "| server | users | body MiB | first byte ms | whole body ms | idle RSS MiB | peak RSS MiB | growth MiB |",
      "|---|--:|--:|--:|--:|--:|--:|--:|",
      line("service", s),
      line("floor", f),
    ];
    console.log(streamRows.join("\n"));
    await measure(
      `GET /api/users (${fmt(count)} users)`,
      {
        path: "/api/users",
        connections: 2,
      },
      true,
      SLICES,
    );
  }

  // A million users: the service alone (the floor would hold the whole
  // ~140 MiB body in memory), streamed once, then the indexed lookups.
  let million: Stream | undefined;
  if (opts.millionUsers > 0) {
    const more = await seed(sql, opts.millionUsers);
    console.log(
      `seeded up to ${fmt(opts.millionUsers)} users (+${more.added} in ${
        fmt(more.ms)
      } ms)`,
    );
    const m = million = await streamOnce(service, sid);
    const line = `| service | ${fmt(m.count)} | ${
      fmt(m.bytes / 1024 / 1024, 1)
    } | ${fmt(m.firstByteMs)} | ${fmt(m.totalMs)} | ${fmt(m.idleMiB)} | ${
      fmt(m.peakMiB)
    } | ${fmt(growthMiB(m))} |`;
    millionRows = [
      "| server | users | body MiB | first byte ms | whole body ms | idle RSS MiB | peak RSS MiB | growth MiB |",
      "|---|--:|--:|--:|--:|--:|--:|--:|",
      line,
    ];
    console.log(millionRows.join("\n"));
    const [{ id: middle }] = await sql<{ id: number }[]>`
        select id from users order by id
        offset ${Math.floor(opts.millionUsers / 2)} limit 1`;
    await measure(
      `GET /api/users?username= (${fmt(opts.millionUsers)} users)`,
      { path: `/api/users?username=USER${middle}` },
      false,
    );
    // Contained in 11 usernames (user77777, user777770..user777779).
    await measure(
      `GET /api/users?q= (${fmt(opts.millionUsers)} users)`,
      { path: "/api/users?q=r77777" },
      false,
    );
  }

  // The embedded default: a first start (initdb) and a second.
  const dataDir = await Deno.makeTempDir({ prefix: "user-admin-bench-" });
  try {
    const env = { DATA_DIR: dataDir };
    let firstMs = 0;
    {
      await using first = await startService(env);
      firstMs = first.readyMs;
    }
    await using again = await startService(env);
    notes.push(
      `embedded PGlite (no DATABASE_URL): first start in an empty DATA_DIR ${
        fmt(firstMs)
      } ms, start on existing data ${fmt(again.readyMs)} ms`,
    );
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }

  // The targets, each with what this run measured.
  const row = (prefix: string) =>
    rows.find((r) => r.scenario.startsWith(prefix))!;
  const listRow = row("GET /api/users (");
  const meRow = row("GET /api/auth/me");
  const healthRow = row("GET /health");
  const targets: [string, string, boolean][] = [];
  for (const r of [listRow, meRow]) {
    const ratio = r.ratio!.median;
    const target = floorTarget(r);
    targets.push([
      `${r.scenario}: ≥ ${target} × floor req/s`,
      `${ratio.toFixed(2)} × (${fmt(r.service.rps)} vs ${fmt(r.floor!.rps)}; ${
        roundRange(r.ratio!)
      })`,
      ratio >= target,
    ]);
    targets.push([
      `${r.scenario}: p99 < 50 ms`,
      `${fmt(r.service.p99Ms, 1)} ms`,
      r.service.p99Ms < 50,
    ]);
  }
  targets.push([
    "PATCH role with its audit record: ≥ 0.85 × the same PATCH, its record dropped",
    `${auditRatio.toFixed(2)} × (${fmt(patch.a.rps)} vs ${fmt(patch.b.rps)}; ${
      roundRange(patch.ratio)
    }; ${perRequest(patch.as).toFixed(2)} records per request)`,
    auditRatio >= 0.85,
  ]);
  for (const { row: r, hashes, ratio } of bcryptRows) {
    targets.push([
      `${r.scenario}: ≥ 0.85 × the cores' bcrypt rate, in turns`,
      `${ratio.median.toFixed(2)} × (${fmt(r.service.rps, 1)}/s vs ${
        fmt(hashes, 1)
      } hashes/s; ${roundRange(ratio)})`,
      ratio.median >= 0.85,
    ]);
  }
  targets.push([
    "GET /health p99 < 50 ms while creations saturate the CPU",
    `${fmt(healthRow.service.p99Ms, 1)} ms`,
    healthRow.service.p99Ms < 50,
  ]);
  if (streamed) {
    targets.push([
      `GET /api/users at ${fmt(opts.streamUsers)} users: first byte < 200 ms`,
      `${fmt(streamed.firstByteMs)} ms`,
      streamed.firstByteMs < 200,
    ]);
    const growth = growthMiB(streamed);
    targets.push([
      `GET /api/users at ${
        fmt(opts.streamUsers)
      } users: peak RSS < idle + 64 MiB`,
      `+${fmt(growth)} MiB`,
      growth < 64,
    ]);
  }
  const poll = row(`GET /api/users (${fmt(opts.users)} users) unchanged`);
  const pollRatio = poll.service.rps / listRow.floor!.rps;
  targets.push([
    `unchanged poll of ${
      fmt(opts.users)
    } users (304): ≥ 2 × the floor's full list req/s`,
    `${pollRatio.toFixed(2)} × (${fmt(poll.service.rps)} vs ${
      fmt(listRow.floor!.rps)
    })`,
    pollRatio >= 2,
  ]);
  if (million) {
    const growth = growthMiB(million);
    targets.push([
      `GET /api/users at ${
        fmt(opts.millionUsers)
      } users: every user, the body a whole array`,
      `${fmt(million.count)} users, ${million.complete ? "complete" : "cut"}`,
      million.count === opts.millionUsers && million.complete,
    ]);
    targets.push([
      `GET /api/users at ${
        fmt(opts.millionUsers)
      } users: peak RSS ≤ idle + 32 MiB`,
      `+${fmt(growth)} MiB`,
      growth <= 32,
    ]);
    if (streamed) {
      const small = growthMiB(streamed);
      targets.push([
        `GET /api/users: RSS growth at ${
          fmt(opts.millionUsers)
        } users within 8 MiB of that at ${fmt(opts.streamUsers)}`,
        `+${fmt(growth)} vs +${fmt(small)} MiB`,
        growth - small <= 8,
      ]);
    }
    const lookup = row("GET /api/users?username=");
    targets.push([
      `${lookup.scenario}: p99 < 50 ms`,
      `${fmt(lookup.service.p99Ms, 1)} ms`,
      lookup.service.p99Ms < 50,
    ]);
  }
  targets.push(...keyed.targets);
  targets.push([
    "start against a migrated PostgreSQL < 1 s",
    `${fmt(service.readyMs)} ms`,
    service.readyMs < 1000,
  ]);
  const targetRows = [
    "| target | measured | met |",
    "|---|---|---|",
    ...targets.map(([t, m, ok]) =>
      `| ${t} | ${m} | ${ok ? "yes" : "**no**"} |`
    ),
  ];
  console.log(`\n${targetRows.join("\n")}`);

  // Anything after the marker in the old file is written by hand: kept.
  const MARKER = KEPT_MARKER;
  let kept = "";
  try {
    const old = await Deno.readTextFile(opts.out);
    const at = old.indexOf(MARKER);
    if (at >= 0) kept = old.slice(at);
  } catch { /* first run */ }

  const md = [
    "# Benchmark results",
    "",
    `Written by \`deno task bench\` on ${new Date().toISOString()}.`,
    "",
    `- machine: ${cores} cores (${Deno.build.os} ${Deno.build.arch}), shared with other work; Deno ${Deno.version.deno}; ${wrkVersion}`,
    `- PostgreSQL ${
      (await sql`show server_version`)[0].server_version
    } on the same machine; ${fmt(opts.users)} users for the main table`,
    `- wrk over loopback, ${opts.connections} connections (bcrypt scenarios 4, /health beside them 1), ${opts.duration} s per scenario after a 1 s warm-up; a ratio is the median of ${FAST.rounds} rounds of ${FAST.duration} s a side (requests of milliseconds: the floor pairs, the audit pair, key beside cookie) or of ${SLICES.rounds} rounds of ${SLICES.duration} s (the bcrypt pairs, the long list), taken in turns after a ${opts.warmup} s warm-up a side, in turns too (the table shows each side's median round)`,
    "- service: `deno run main.ts` with its defaults (`LOG_LEVEL` `info`: an access log line per request, its stdout read by the bench), `DATABASE_POOL_MAX` 10; floor: `tests/bench/floor.ts`, same SQL, same session check, byte-identical bodies and the same headers (request id and the four security headers; checked by the bench)",
    "- peak RSS: the process's VmHWM, reset before each scenario",
    `- load average (1 min) of the machine: ${loadAtStart} at the start, ${await loadAverage()} at the end`,
    "",
    table(rows),
    "",
    ...(streamRows.length
      ? [
        `## GET /api/users with ${fmt(opts.streamUsers)} users, one request`,
        "",
        ...streamRows,
        "",
      ]
      : []),
    ...(millionRows.length
      ? [
        `## GET /api/users with ${
          fmt(opts.millionUsers)
        } users, one request (the service alone)`,
        "",
        ...millionRows,
        "",
      ]
      : []),
    "## Targets",
    "",
    ...targetRows,
    "",
    "## Notes",
    "",
    ...notes.map((n) => `- ${n}`),
    "",
    kept,
  ].join("\n");
  await Deno.writeTextFile(opts.out, md);
  // Padded tables, so the file stays as `deno fmt` wants it.
  await run(Deno.execPath(), ["fmt", opts.out]);
  console.log(`\n${table(rows)}\n\nwrote ${opts.out}`);
}

// ---------------------------------------------------------------- a million

/**
 * The sections `--million` and `--against` write into RESULTS.md, after the
 * kept marker: each run replaces its own and keeps the other.
 */
const MILLION_HEADING = "## A million users";
const AGAINST_HEADING = "## Side by side with another checkout";
const SCIM_HEADING = "## SCIM at a million users";
/** The head of the tables of requests at a million users. */
const REQUEST_TABLE = [
  "| request | req/s | p50 ms | p99 ms | errors | target met |",
  "|---|--:|--:|--:|--:|---|",
];
const KEPT_MARKER = "<!-- written by hand below: kept by the bench -->";

/** `--million`: every kind of request on a million users and audit records. */
async function million() {
  const wrkPath = await findWrk();
  const connections = 8;
  const users = opts.millionUsers;
  // `--scim`: the SCIM rows alone, written as their own section.
  const scimOnly = Deno.args.includes("--scim");
  const loadAtStart = await uptime();
  console.log(`load: ${loadAtStart}`);
  await using db = await scratchDatabase("ua_bench");
  const { url: databaseUrl, sql } = db;
  {
    // Migrates the empty database and creates the bench's admin.
    await using _ = await startService({ DATABASE_URL: databaseUrl });
  }
  // `users` besides the bench's admin, the last of them an admin: two admins.
  const seeded = await seed(sql, users + 1, { adminEvery: users });
  console.log(`seeded ${fmt(seeded.added)} users in ${fmt(seeded.ms)} ms`);
  const [{ id: seededAdmin }] = await sql<{ id: number }[]>`
      select id from users where role = 'admin' order by id desc limit 1`;
  const started = performance.now();
  if (!scimOnly) await seedAudit(sql, users, { users, actorId: seededAdmin });
  console.log(
    `seeded ${fmt(users)} audit records in ${
      fmt(performance.now() - started)
    } ms`,
  );

  await using service = await startService({ DATABASE_URL: databaseUrl });
  const sid = await login(service.baseUrl);
  const [{ id: middle, username }] = await sql<
    { id: number; username: string }[]
  >`select id, username from users order by id offset ${users >> 1} limit 1`;
  const [deep] = await sql<{ at: string; id: number }[]>`
      select (extract(epoch from created_at) * 1000000)::int8::text as at, id
      from users order by created_at desc, id desc offset 100 limit 1`;
  const patchTargets = await viewerTargets(sql);
  // Five disabled users, spread over the table, for the status filter.
  await sql`
      update users set disabled_at = now(), disabled_reason = 'bench'
      where id in (select id from users where role = 'viewer'
        order by id offset ${users >> 3} limit 5)`;
  // Deleted one each, from the second quarter on: never a PATCH target.
  const [{ id: firstDeleted }] = await sql<{ id: number }[]>`
      select id from users order by id offset ${users >> 2} limit 1`;
  // A thousandth have signed in (the order by last sign-in reads both
  // parts), and a person whose role reads only a group's members.
  await sql`
      update users set last_login_at = now() - (id % 9973) * interval '1 minute'
      where id % 1000 = 7`;
  const limited = await groupLimited(service.baseUrl, sid, sql);

  const loads: [string, Load][] = [
    ["GET /api/auth/me", { path: "/api/auth/me" }],
    ["GET /api/users/:id", { path: `/api/users/${middle}` }],
    ["GET /api/users?username=", {
      path: `/api/users?username=${username.toUpperCase()}`,
    }],
    ["GET /api/users?email=", {
      path: `/api/users?email=${username}%40EXAMPLE.com`,
    }],
    // 11 users: user77777 and user777770 to user777779.
    ["GET /api/users?q= (selective)", { path: "/api/users?q=r77777" }],
    ["GET /api/users?q=user&limit=50 (every user matches)", {
      path: "/api/users?q=user&limit=50",
    }],
    ["GET /api/users?limit=50 (first page)", {
      path: "/api/users?limit=50",
    }],
    ["GET /api/users?limit=50&after= (a page near the end)", {
      path: `/api/users?limit=50&after=${encodeCursor(deep)}`,
    }],
    ["GET /api/users?limit=50&include=state (the console's first page)", {
      path: "/api/users?limit=50&include=state",
    }],
    ["GET /api/users/count (an estimate past 10,000)", {
      path: "/api/users/count",
    }],
    ["GET /api/users/count?q=r77777 (11 users, exact)", {
      path: "/api/users/count?q=r77777",
    }],
    ["GET /api/users?limit=50&include=state&sort=username", {
      path: "/api/users?limit=50&include=state&sort=username",
    }],
    ["GET /api/users?limit=50&include=state&sort=-lastLoginAt", {
      path: "/api/users?limit=50&include=state&sort=-lastLoginAt",
    }],
    ["GET /api/users?limit=50&sort=lastLoginAt&after= (past who signed in)", {
      path: `/api/users?limit=50&sort=lastLoginAt&after=${
        encodeCursor({ at: null, id: middle }, "lastLoginAt")
      }`,
    }],
    [
      `GET /api/users?limit=50 (a role limited to a group of ${
        fmt(limited.members)
      })`,
      { path: "/api/users?limit=50", sid: limited.sid },
    ],
    [`GET /api/users?limit=50&include=state&sort=username (the same role)`, {
      path: "/api/users?limit=50&include=state&sort=username",
      sid: limited.sid,
    }],
    ["GET /api/users?role=admin (2 users)", {
      path: "/api/users?role=admin",
    }],
    ["GET /api/users?role=viewer&limit=100", {
      path: "/api/users?role=viewer&limit=100",
    }],
    ["GET /api/users?status=disabled (5 users)", {
      path: "/api/users?status=disabled",
    }],
    ["GET /api/users?status=active&limit=100", {
      path: "/api/users?status=active&limit=100",
    }],
    ["GET /api/audit (first page, 100 records)", { path: "/api/audit" }],
    ["GET /api/audit?targetId=", {
      path: `/api/audit?targetId=${middle}`,
    }],
    ["GET /api/audit?actorId= (a tenth of the records)", {
      path: `/api/audit?actorId=${seededAdmin}`,
    }],
    ["GET /api/audit?action=user.password_reset (one in a hundred)", {
      path: "/api/audit?action=user.password_reset",
    }],
    [
      "PATCH /api/users/:id (role flips: an audit record each)",
      roleFlips(patchTargets),
    ],
    ["DELETE /api/users/:id (a user each)", {
      path: "/api/users/",
      method: "DELETE",
      targetFirst: firstDeleted,
    }],
  ];
  const rows: string[] = [];
  let deleteFrom = firstDeleted;
  for (const [scenario, load] of scimOnly ? [] : loads) {
    console.log(`${scenario} ...`);
    // A second alone first (the JIT, the pool, the plan cache), then measured.
    const warm = await wrk(wrkPath, service, load.sid ?? sid, {
      ...load,
      connections,
      duration: 1,
      ...(load.targetFirst !== undefined ? { targetFirst: deleteFrom } : {}),
    });
    if (load.targetFirst !== undefined) deleteFrom += warm.requests + 1000;
    if (load.alternate) await asViewers(sql, patchTargets);
    const m = await wrk(wrkPath, service, load.sid ?? sid, {
      ...load,
      connections,
      ...(load.targetFirst !== undefined ? { targetFirst: deleteFrom } : {}),
    });
    const met = m.p99Ms < 50 && m.errors === 0;
    const row = `| ${scenario} | ${fmt(m.rps)} | ${fmt(m.p50Ms, 1)} | ${
      fmt(m.p99Ms, 1)
    } | ${fmt(m.errors)} | ${met ? "yes" : "**no**"} |`;
    console.log(row);
    rows.push(row);
  }
  const scimLoadAtStart = await uptime();
  const scim = await scimRows(
    wrkPath,
    service,
    sid,
    connections,
    username,
    sql,
  );
  const scimSection = [
    SCIM_HEADING,
    "",
    `\`deno task bench --million${scimOnly ? " --scim" : ""}\` (${
      fmt(users)
    } users seeded besides the bench's admin, and one made through SCIM for the \`externalId\` row; wrk ${connections} connections, ${opts.duration} s per row after 1 s alone; PostgreSQL on the same machine; target p99 < 50 ms and no error answers, creations ≥ 1,000 a second, through Bulk ≥ 3,000). \`uptime\` at the start: \`${scimLoadAtStart}\`; at the end: \`${await uptime()}\`.`,
    "",
    ...REQUEST_TABLE,
    ...scim,
    "",
  ].join("\n");
  await writeSection(scimSection);
  console.log(`\n${scimSection}\nwrote ${opts.out}`);
  if (scimOnly) return;
  // Twice: the first long list a process serves grows its heap to the
  // size it then keeps (see docs/performance.md); the second shows what
  // a list holds.
  const streamRows: string[] = [];
  for (const which of ["first", "second"]) {
    const s = await streamOnce(service, sid);
    const row = `| GET /api/users, the ${which} (${fmt(s.count)} users, ${
      s.complete ? "a whole array" : "**cut short**"
    }, ${fmt(s.bytes / 1024 / 1024, 1)} MiB) | first byte ${
      fmt(s.firstByteMs)
    } ms, whole body ${fmt(s.totalMs)} ms | RSS idle ${
      fmt(s.idleMiB)
    } MiB, peak ${fmt(s.peakMiB)} MiB (+${fmt(growthMiB(s))}) |`;
    console.log(row);
    streamRows.push(row);
  }
  const loadAtEnd = await uptime();

  const section = [
    MILLION_HEADING,
    "",
    `\`deno task bench --million\` (${
      fmt(users)
    } users seeded besides the bench's admin, one of them an admin; ${
      fmt(users)
    } audit records; wrk ${connections} connections, ${opts.duration} s per row after 1 s alone; PostgreSQL ${
      (await sql`show server_version`)[0].server_version
    } on the same machine; target p99 < 50 ms and no error answers). \`uptime\` at the start: \`${loadAtStart}\`; at the end: \`${loadAtEnd}\`.`,
    "",
    ...REQUEST_TABLE,
    ...rows,
    "",
    "| streamed full list, one request | time | memory |",
    "|---|---|---|",
    ...streamRows,
    "",
  ].join("\n");
  await writeSection(section);
  console.log(`\n${section}\nwrote ${opts.out}`);
}

/** Calls of the API as the session `sid`, answering the body; a 3xx or worse throws. */
function apiAs(baseUrl: string, sid: string) {
  return async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { cookie: `sid=${sid}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const answer = await res.json();
    if (res.status >= 300) {
      throw new Error(`${method} ${path}: ${res.status} ${answer.error}`);
    }
    return answer;
  };
}

/**
 * A viewer given a role that reads users, limited to a group of every
 * hundredth user (members written in one statement: the API adds a
 * thousand a request), signed in.
 */
async function groupLimited(baseUrl: string, sid: string, sql: Sql) {
  const api = apiAs(baseUrl, sid);
  const person = {
    username: "bench-limited",
    password: "bench-limited-password",
  };
  const lead = await api("POST", "/api/users", {
    ...person,
    name: "Bench Limited",
    email: "bench-limited@example.com",
    role: "viewer",
  });
  const role = await api("POST", "/api/roles", {
    name: "Bench region reader",
    permissions: ["users:read"],
  });
  const group = await api("POST", "/api/groups", {
    displayName: "Bench region",
  });
  const [{ members }] = await sql<{ members: number }[]>`
    with added as (
      insert into scim_members (group_id, user_id)
      select ${group.id}, id from users where id % 100 = 0
      returning 1)
    select count(*)::int as members from added`;
  await api("POST", "/api/assignments", {
    roleId: role.id,
    userId: lead.id,
    reachGroupId: group.id,
  });
  return { members, sid: await sessionToken(baseUrl, person) };
}

/** The p99 and p50 of sequential latencies, in ms. */
function percentiles(ms: number[]) {
  const sorted = ms.toSorted((a, b) => a - b);
  const at = (p: number) =>
    sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
  return { p50: at(0.5), p99: at(0.99), max: sorted.at(-1)! };
}

/**
 * SCIM on the million: `userName eq` under wrk, every page of the users
 * in sequence (count=100) as an identity provider reads them, by
 * `startIndex` and by cursor, one client, and group PATCHes adding 1,000
 * members each in one request.
 */
async function scimRows(
  wrkPath: string,
  service: Proc,
  sid: string,
  connections: number,
  username: string,
  sql: Sql,
): Promise<string[]> {
  const made = await fetch(`${service.baseUrl}/api/scim/connections`, {
    method: "POST",
    headers: { cookie: `sid=${sid}`, "content-type": "application/json" },
    body: JSON.stringify({ name: "bench", adminGroups: [] }),
  });
  if (made.status !== 201) throw new Error(`connection: ${made.status}`);
  const { token } = await made.json();
  const auth = { authorization: `Bearer ${token}` };
  const rows: string[] = [];
  const row = (
    scenario: string,
    m: { rps?: number; p50: number; p99: number; errors: number },
  ) => {
    const met = m.p99 < 50 && m.errors === 0;
    const line = `| ${scenario} | ${m.rps === undefined ? "-" : fmt(m.rps)} | ${
      fmt(m.p50, 1)
    } | ${fmt(m.p99, 1)} | ${fmt(m.errors)} | ${met ? "yes" : "**no**"} |`;
    console.log(line);
    rows.push(line);
  };

  const filter = encodeURIComponent(`userName eq "${username.toUpperCase()}"`);
  const eq: Load = {
    path: `/scim/v2/Users?filter=${filter}`,
    headers: [`Authorization: Bearer ${token}`],
    connections,
  };
  console.log("GET /scim/v2/Users?filter=userName eq ...");
  await wrk(wrkPath, service, sid, { ...eq, duration: 1 });
  const m = await wrk(wrkPath, service, sid, eq);
  row('GET /scim/v2/Users?filter=userName eq "..."', {
    rps: m.rps,
    p50: m.p50Ms,
    p99: m.p99Ms,
    errors: m.errors,
  });

  // An identity provider's own user, for the externalId lookup.
  const linked = await fetch(`${service.baseUrl}/scim/v2/Users`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/scim+json" },
    body: JSON.stringify({
      schemas: ["urn:ietf:params:scim:schemas:core:2.0:User"],
      userName: "bench-linked",
      externalId: "bench-external-1",
      emails: [{ value: "bench-linked@example.com", primary: true }],
    }),
  });
  if (linked.status !== 201) throw new Error(`linked: ${linked.status}`);
  await linked.body?.cancel();
  const more: [string, string][] = [
    [
      'GET /scim/v2/Users?filter=emails.value eq "..." (an address in other case)',
      `emails.value eq "${username.toUpperCase()}@example.com"`,
    ],
    [
      'GET /scim/v2/Users?filter=externalId eq "..."',
      'externalId eq "bench-external-1"',
    ],
    [
      'GET /scim/v2/Users?filter=userName sw "user77777" (11 users)',
      'userName sw "user77777"',
    ],
  ].map(([name, f]) => [name, `filter=${encodeURIComponent(f)}`]);
  more.push(
    ["GET /scim/v2/Users?startIndex=1&count=100", "startIndex=1&count=100"],
    [
      "GET /scim/v2/Users?startIndex=500001&count=100",
      "startIndex=500001&count=100",
    ],
  );
  for (const [name, query] of more) {
    const load: Load = { ...eq, path: `/scim/v2/Users?${query}` };
    console.log(`${name} ...`);
    await wrk(wrkPath, service, sid, { ...load, duration: 1 });
    const r = await wrk(wrkPath, service, sid, load);
    row(name, { rps: r.rps, p50: r.p50Ms, p99: r.p99Ms, errors: r.errors });
  }

  // Every page in sequence, as one identity provider reads them.
  const [{ n }] = await sql<{ n: number }[]>`
    select count(*)::int as n from users`;
  const pages = Math.ceil(n / 100);
  console.log(`GET /scim/v2/Users?startIndex=..&count=100: ${pages} pages`);
  const times: number[] = [];
  let errors = 0;
  let seen = 0;
  for (let page = 0; page < pages; page++) {
    const t = performance.now();
    const res = await fetch(
      `${service.baseUrl}/scim/v2/Users?startIndex=${page * 100 + 1}&count=100`,
      { headers: auth },
    );
    const body = await res.json();
    times.push(performance.now() - t);
    if (res.status !== 200) errors++;
    else seen += body.Resources.length;
  }
  if (seen !== n) errors++;
  const paged = percentiles(times);
  row(
    `GET /scim/v2/Users?startIndex=&count=100, all ${
      fmt(pages)
    } pages in sequence (one client; ${fmt(seen)} users read)`,
    { p50: paged.p50, p99: paged.p99, errors },
  );

  // Every page by cursor (RFC 9865), in sequence, as one identity provider
  // walks them: each page a keyset read from the place the last one ended.
  const cursorTimes: number[] = [];
  let cursorErrors = 0;
  let walked = 0;
  let cursor: string | undefined = "";
  let halfway: string | undefined;
  while (cursor !== undefined) {
    if (halfway === undefined && walked >= n / 2) halfway = cursor;
    const t = performance.now();
    const res: Response = await fetch(
      `${service.baseUrl}/scim/v2/Users?count=100&cursor=${cursor}`,
      { headers: auth },
    );
    const body: { Resources: unknown[]; nextCursor?: string } = await res
      .json();
    cursorTimes.push(performance.now() - t);
    if (res.status !== 200) {
      cursorErrors++;
      break;
    }
    walked += body.Resources.length;
    cursor = body.nextCursor;
  }
  if (walked !== n) cursorErrors++;
  const byCursor = percentiles(cursorTimes);
  row(
    `GET /scim/v2/Users?cursor=&count=100, all ${
      fmt(cursorTimes.length)
    } pages by nextCursor (one client; ${fmt(walked)} users read)`,
    { p50: byCursor.p50, p99: byCursor.p99, errors: cursorErrors },
  );
  if (halfway !== undefined) {
    const name = "GET /scim/v2/Users?cursor=&count=100 (a cursor halfway)";
    const load: Load = {
      ...eq,
      path: `/scim/v2/Users?count=100&cursor=${halfway}`,
    };
    console.log(`${name} ...`);
    await wrk(wrkPath, service, sid, { ...load, duration: 1 });
    const r = await wrk(wrkPath, service, sid, load);
    row(name, { rps: r.rps, p50: r.p50Ms, p99: r.p99Ms, errors: r.errors });
  }

  // Group PATCH: 1,000 members added in one request, five groups.
  // Viewers only: a member of a group outside the connection's adminGroups
  // is a viewer, and the bench's admin must stay one for the rows after.
  const ids = (await sql<{ id: number }[]>`
    select id from users where role = 'viewer' order by id limit 5000`)
    .map((r) => r.id);
  const patchTimes: number[] = [];
  let patchErrors = 0;
  for (let g = 0; g < 5; g++) {
    const group = await fetch(`${service.baseUrl}/scim/v2/Groups`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/scim+json" },
      body: JSON.stringify({ displayName: `bench ${g}` }),
    });
    const { id } = await group.json();
    const members = ids.slice(g * 1000, g * 1000 + 1000).map((value) => ({
      value: String(value),
    }));
    const t = performance.now();
    const res = await fetch(`${service.baseUrl}/scim/v2/Groups/${id}`, {
      method: "PATCH",
      headers: { ...auth, "content-type": "application/scim+json" },
      body: JSON.stringify({
        schemas: ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
        Operations: [{ op: "add", path: "members", value: members }],
      }),
    });
    const body = await res.json();
    patchTimes.push(performance.now() - t);
    if (res.status !== 200 || body.members?.length !== 1000) patchErrors++;
  }
  const patched = percentiles(patchTimes);
  rows.push(await scimCreations(service.baseUrl, auth));
  rows.push(await scimCreations(service.baseUrl, auth, true));
  const line =
    `| PATCH /scim/v2/Groups/:id adding 1,000 members in one request (5 groups, one at a time) | - | ${
      fmt(patched.p50, 1)
    } | max ${fmt(patched.max, 1)} | ${fmt(patchErrors)} | ${
      patchErrors === 0 ? "yes (no latency target)" : "**no**"
    } |`;
  console.log(line);
  rows.push(line);
  return rows;
}

/**
 * 20,000 users created without passwords by 12 writers at once, as an
 * identity provider's import sends them: one `POST /scim/v2/Users` each, or
 * (`bulk`) `POST /scim/v2/Bulk` requests of 100 creations. Users a second
 * over the whole run, and each request's latency; the statuses of what
 * failed are printed.
 */
async function scimCreations(
  baseUrl: string,
  auth: Record<string, string>,
  bulk = false,
): Promise<string> {
  const total = 20_000;
  const writers = 12;
  const perRequest = bulk ? 100 : 1;
  const prefix = bulk ? "scim-bulk" : "scim-bench";
  const user = (i: number) => ({
    schemas: ["urn:ietf:params:scim:schemas:core:2.0:User"],
    userName: `${prefix}-${i}@example.org`,
    externalId: `${prefix}-${i}`,
    name: { givenName: "Scim", familyName: `Bench ${i}` },
    emails: [{ value: `${prefix}-${i}@example.org`, primary: true }],
  });
  const body = (first: number) =>
    JSON.stringify(
      bulk
        ? {
          schemas: ["urn:ietf:params:scim:api:messages:2.0:BulkRequest"],
          Operations: Array.from({ length: perRequest }, (_, k) => ({
            method: "POST",
            path: "/Users",
            bulkId: `u${first + k}`,
            data: user(first + k),
          })),
        }
        : user(first),
    );
  const times: number[] = [];
  const failures = new Map<string, number>();
  const failed = (what: string) =>
    failures.set(what, (failures.get(what) ?? 0) + 1);
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: writers }, async () => {
      while (next < total) {
        const first = next;
        next += perRequest;
        const t = performance.now();
        const res = await fetch(
          `${baseUrl}/scim/v2/${bulk ? "Bulk" : "Users"}`,
          {
            method: "POST",
            headers: { ...auth, "content-type": "application/scim+json" },
            body: body(first),
          },
        );
        const text = await res.text();
        times.push(performance.now() - t);
        if (res.status !== (bulk ? 200 : 201)) {
          failed(`${res.status} ${text.slice(0, 200)}`);
        } else if (bulk) {
          for (const op of JSON.parse(text).Operations) {
            if (op.status !== "201") {
              failed(`${op.status} ${JSON.stringify(op.response)}`);
            }
          }
        }
      }
    }),
  );
  const rate = total / ((performance.now() - started) / 1000);
  const errors = [...failures.values()].reduce((a, b) => a + b, 0);
  if (errors > 0) console.log(`failed: ${JSON.stringify([...failures])}`);
  const p = percentiles(times);
  const target = bulk ? 3000 : 1000;
  const line = `| POST /scim/v2/${bulk ? "Bulk" : "Users"}, ${
    fmt(total)
  } users without passwords${
    bulk ? `, ${perRequest} a request` : ""
  }, ${writers} writers at once (users a second; latency a request) | ${
    fmt(rate)
  } | ${fmt(p.p50, 1)} | ${fmt(p.p99, 1)} | ${fmt(errors)} | ${
    rate >= target && errors === 0
      ? `yes (≥ ${fmt(target)} users a second)`
      : "**no**"
  } |`;
  console.log(line);
  return line;
}

/**
 * Puts `section` (its first line its heading) in place of the old one with
 * that heading, up to the next heading of its level, or first after the
 * kept marker.
 */
async function writeSection(section: string) {
  const heading = section.slice(0, section.indexOf("\n"));
  let text = await Deno.readTextFile(opts.out).catch(() => "");
  const at = text.indexOf(heading);
  if (at >= 0) {
    const next = text.indexOf("\n## ", at + heading.length);
    text = text.slice(0, at) + section +
      (next >= 0 ? text.slice(next + 1) : "");
  } else {
    const marker = text.indexOf(KEPT_MARKER);
    if (marker < 0) text += `\n${KEPT_MARKER}\n\n`;
    const insertAt = text.indexOf(KEPT_MARKER) + KEPT_MARKER.length;
    text = `${text.slice(0, insertAt)}\n\n${section}\n${text.slice(insertAt)}`;
  }
  await Deno.writeTextFile(opts.out, text);
  await run(Deno.execPath(), ["fmt", opts.out]);
}

// ---------------------------------------------------------------- against

/**
 * A checkout in a line: its last commit (`git log -1 --format='%h %s'`)
 * and what is uncommitted there (`git status --short`, the first ten), so
 * that a swapped directory shows.
 */
async function describeCheckout(dir: string): Promise<string> {
  const git = async (...args: string[]) => {
    const r = await run("git", ["-C", dir, ...args]);
    if (!r.ok) {
      throw new Error(`git -C ${dir} ${args.join(" ")}: ${r.stderr.trim()}`);
    }
    return r.stdout;
  };
  const commit = (await git("log", "-1", "--format=%h %s")).trim()
    .replaceAll("`", "'");
  const changes = (await git("status", "--short")).split("\n")
    .filter((line) => line.trim());
  if (changes.length === 0) {
    return `\`${commit}\`, nothing uncommitted (\`git status --short\` empty)`;
  }
  const shown = changes.slice(0, 10).map((c) => `\`${c}\``).join(", ");
  const more = changes.length > 10 ? `, and ${changes.length - 10} more` : "";
  return `\`${commit}\`, with ${changes.length} uncommitted (\`git status --short\`): ${shown}${more}`;
}

interface Side {
  proc: Proc;
  sql: Sql;
  sid: string;
  /** viewerTargets; the first is also the user read by GET /api/users/:id. */
  targets: number[];
}

interface SideBySide {
  scenario: string;
  here: Measured[];
  other: Measured[];
  /** This/other req/s of each round, and their median. */
  ratio: { median: number; rounds: number[] };
}

/** Each side's medians of its rounds, and the ratios this/other. */
function sideBySideTable(rows: SideBySide[]): string {
  const side = (runs: Measured[]) => {
    const at = (f: (m: Measured) => number) => median(runs.map(f));
    return `${fmt(at((m) => m.rps))} | ${fmt(at((m) => m.p50Ms), 1)} | ${
      fmt(at((m) => m.p99Ms), 1)
    } | ${fmt(cpuPerRequest(runs))}`;
  };
  const errors = (runs: Measured[]) => runs.reduce((n, m) => n + m.errors, 0);
  const lines = [
    "| scenario | this req/s | p50 ms | p99 ms | CPU µs/req | other req/s | p50 ms | p99 ms | CPU µs/req | this/other req/s | rounds | this/other CPU/req |",
    "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
  ];
  for (const { scenario, here, other, ratio } of rows) {
    const errs = errors(here) + errors(other)
      ? ` (errors: ${errors(here)} this, ${errors(other)} other)`
      : "";
    lines.push(
      `| ${scenario}${errs} | ${side(here)} | ${side(other)} | ${
        ratio.median.toFixed(2)
      } | ${roundList(ratio)} | ${
        (cpuPerRequest(here) / cpuPerRequest(other)).toFixed(2)
      } |`,
    );
  }
  return lines.join("\n");
}

/**
 * `--against <dir>`: this checkout's service beside the service of the
 * checkout at `dir`, each on a database of its own seeded alike, in turns.
 */
async function against(dir: string) {
  const wrkPath = await findWrk();
  const there = await Deno.realPath(dir);
  if (!(await Deno.stat(`${there}/main.ts`).catch(() => null))) {
    throw new Error(`--against ${dir}: no main.ts there, not a checkout`);
  }
  const loadAtStart = await uptime();
  const thisCheckout = await describeCheckout(new URL("../../", HERE).pathname);
  const otherCheckout = await describeCheckout(there);
  console.log(
    `this checkout: ${thisCheckout}\nother, ${there}: ${otherCheckout}\nload: ${loadAtStart}`,
  );

  await using hereDb = await scratchDatabase("ua_bench");
  await using otherDb = await scratchDatabase("ua_bench");
  const prepare = async (db: { url: string; sql: Sql }, cwd?: string) => {
    {
      // Its own service migrates the empty database and creates the admin.
      await using _ = await startService({ DATABASE_URL: db.url }, cwd);
    }
    const seeded = await seed(db.sql, opts.users).catch((e) => {
      throw new Error(
        `seeding ${
          cwd ?? "this checkout"
        }'s database with tests/support/seed.ts: ${e.message}`,
      );
    });
    console.log(
      `${cwd ?? "this checkout"}: seeded ${seeded.added} users in ${
        fmt(seeded.ms)
      } ms`,
    );
  };
  await prepare(hereDb);
  await prepare(otherDb, there);
  await using hereProc = await startService({ DATABASE_URL: hereDb.url });
  await using otherProc = await startService(
    { DATABASE_URL: otherDb.url },
    there,
  );
  const ready = async (proc: Proc, sql: Sql): Promise<Side> => ({
    proc,
    sql,
    sid: await login(proc.baseUrl),
    targets: await viewerTargets(sql),
  });
  const here = await ready(hereProc, hereDb.sql);
  const other = await ready(otherProc, otherDb.sql);

  const scenarios: [string, (s: Side) => Load][] = [
    ["GET /api/auth/me", () => ({ path: "/api/auth/me" })],
    ["GET /api/users/:id", (s) => ({ path: `/api/users/${s.targets[0]}` })],
    [`GET /api/users (${fmt(opts.users)} users)`, () => ({
      path: "/api/users",
    })],
    [
      "PATCH /api/users/:id (role flips: an audit record each)",
      (s) => roleFlips(s.targets),
    ],
  ];
  const rows: SideBySide[] = [];
  for (const [scenario, loadOf] of scenarios) {
    say(`${scenario} ...`);
    const on = (s: Side) => async (over?: Partial<Load>) => {
      const load = loadOf(s);
      if (load.alternate) await asViewers(s.sql, s.targets);
      return wrk(wrkPath, s.proc, s.sid, { ...load, ...over });
    };
    const p = await paired(on(here), on(other), undefined, FAST);
    const row = { scenario, here: p.as, other: p.bs, ratio: p.ratio };
    rows.push(row);
    console.log(sideBySideTable([row]).split("\n")[2]);
  }
  const loadAtEnd = await uptime();

  const section = [
    AGAINST_HEADING,
    "",
    `\`deno task bench ${
      Deno.args.join(" ")
    }\`: this checkout's service beside the service of the checkout at \`${there}\`.`,
    "",
    `- this checkout: ${thisCheckout}`,
    `- the other: ${otherCheckout}`,
    `- PostgreSQL ${
      (await hereDb.sql`show server_version`)[0].server_version
    } on the same machine: a database for each side, migrated by that side's own service on its first start (the admin from \`ADMIN_USERNAME\` and \`ADMIN_PASSWORD\`), seeded to ${
      fmt(opts.users)
    } users by this checkout's \`tests/support/seed.ts\`, then the service started again; both run with Deno ${Deno.version.deno} and \`LOG_LEVEL=warn\``,
    `- method: wrk over loopback, ${opts.connections} connections; each scenario in ${FAST.rounds} rounds of ${FAST.duration} s a side, taking turns (the order swaps each round), after a warm-up of ${opts.warmup} s a side, in turns too; a side's figures are the medians of its rounds; this/other req/s is the median of the rounds' ratios (listed); CPU per request is the service process's user + system time over the requests it answered, this/other the ratio of the two medians; the PATCH targets are viewers again before each run`,
    `- \`uptime\` at the start: \`${loadAtStart}\`; at the end: \`${loadAtEnd}\``,
    "",
    sideBySideTable(rows),
    "",
  ].join("\n");
  await writeSection(section);
  console.log(`\n${section}\nwrote ${opts.out}`);
}

// ---------------------------------------------------------------- keys

/**
 * API keys and Idempotency-Key against what they stand beside, in turns:
 * `GET /api/auth/me` with a key against the same with the cookie (the key
 * is looked up instead of the session: targets 0.9), and POST /api/users
 * with an Idempotency-Key of its own per request against without (its row
 * inserted and answered: 0.9). Answers the rows and notes.
 */
async function keyScenarios(
  wrkPath: string,
  service: Proc,
  sid: string,
): Promise<
  { rows: Row[]; notes: string[]; targets: [string, string, boolean][] }
> {
  const me = await fetch(`${service.baseUrl}/api/auth/me`, {
    headers: { cookie: `sid=${sid}` },
  });
  const { id } = await me.json();
  const created = await fetch(`${service.baseUrl}/api/users/${id}/keys`, {
    method: "POST",
    headers: { cookie: `sid=${sid}`, "content-type": "application/json" },
    body: JSON.stringify({ name: "bench" }),
  });
  if (created.status !== 201) throw new Error(`key: ${created.status}`);
  const { key } = await created.json();
  const withKey: Load = {
    path: "/api/auth/me",
    headers: [`Authorization: Bearer ${key}`],
  };
  const withCookie: Load = { path: "/api/auth/me" };
  say("GET /api/auth/me with a key and with the cookie, in turns ...");
  const auth = await paired(
    (over) => wrk(wrkPath, service, sid, { ...withKey, ...over }),
    (over) => wrk(wrkPath, service, sid, { ...withCookie, ...over }),
    undefined,
    FAST,
  );
  let n = 0;
  const creating = (idempotent: boolean): Load => ({
    path: "/api/users",
    method: "POST",
    create: `k${Date.now().toString(36)}${++n}`,
    idempotent,
    connections: 4,
  });
  say("POST /api/users with and without an Idempotency-Key, in turns ...");
  const create = await paired(
    () => wrk(wrkPath, service, sid, creating(true)),
    () => wrk(wrkPath, service, sid, creating(false)),
    () => wrk(wrkPath, service, sid, { ...creating(true), duration: 2 }),
  );
  const rows: Row[] = [
    { scenario: "GET /api/auth/me (session cookie)", service: auth.b },
    { scenario: "GET /api/auth/me (API key)", service: auth.a },
    {
      scenario: "POST /api/users (bcrypt) without an Idempotency-Key",
      service: create.b,
    },
    {
      scenario: "POST /api/users (bcrypt) with an Idempotency-Key each",
      service: create.a,
    },
  ];
  const notes = [
    `GET /api/auth/me with an API key beside the same with the session cookie: ${
      auth.ratio.median.toFixed(2)
    }, median of ${FAST.rounds} rounds of ${FAST.duration} s a side (${
      roundList(auth.ratio)
    }; the target is 0.9); ${cpuNote(auth.as, auth.bs, "key", "cookie")}`,
    `POST /api/users with an Idempotency-Key beside without: ${
      create.ratio.median.toFixed(2)
    }, median of ${opts.rounds} rounds (${
      roundList(create.ratio)
    }; the target is 0.9); ${
      cpuNote(create.as, create.bs, "with a key", "without")
    }`,
  ];
  const targets: [string, string, boolean][] = [
    [
      "GET /api/auth/me with an API key: ≥ 0.9 × with the cookie",
      `${auth.ratio.median.toFixed(2)} (${roundRange(auth.ratio)})`,
      auth.ratio.median >= 0.9,
    ],
    [
      "POST /api/users with an Idempotency-Key: ≥ 0.9 × without",
      `${create.ratio.median.toFixed(2)} (${roundRange(create.ratio)})`,
      create.ratio.median >= 0.9,
    ],
  ];
  return { rows, notes, targets };
}

/** `--keys`: the key and Idempotency-Key scenarios alone, printed (RESULTS.md untouched). */
async function keysOnly() {
  const wrkPath = await findWrk();
  const load = async () =>
    (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ");
  console.log(`load average at start: ${await load()}`);
  await using db = await scratchDatabase("ua_bench");
  await using service = await startService({ DATABASE_URL: db.url });
  const sid = await login(service.baseUrl);
  const { rows, notes, targets } = await keyScenarios(wrkPath, service, sid);
  console.log(table(rows));
  for (const note of notes) console.log(`- ${note}`);
  for (const [what, measured, met] of targets) {
    console.log(`${met ? "met" : "MISSED"}: ${what}: ${measured}`);
  }
  console.log(`load average at end: ${await load()}`);
}

// ---------------------------------------------------------------- access log

/** `--access-log`: GET /api/auth/me with the access log, without, and the floor. */
async function accessLog() {
  const wrkPath = await findWrk();
  const load = async () =>
    (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ");
  console.log(`load average at start: ${await load()}`);
  await using db = await scratchDatabase("ua_bench");
  {
    await using _first = await startService({ DATABASE_URL: db.url });
  }
  await seed(db.sql, opts.users);
  await using logging = await startDefaults(db.url);
  await using quiet = await startService({ DATABASE_URL: db.url });
  await using floor = await startFloor(db.url);
  const sid = await login(logging.baseUrl);
  await sameAnswer(logging, floor, sid, "/api/auth/me");
  const me = (target: Proc) => (over?: Partial<Load>) =>
    wrk(wrkPath, target, sid, { path: "/api/auth/me", ...over });
  const sides = {
    log: () => me(logging)({ duration: FAST.duration }),
    quiet: () => me(quiet)({ duration: FAST.duration }),
    floor: () => me(floor)({ duration: FAST.duration }),
  };
  say(
    `GET /api/auth/me: ${FAST.rounds} rounds of ${FAST.duration} s a side, after ${opts.warmup} s a side of warm-up ...`,
  );
  const runs = await inTurns(
    sides,
    FAST.rounds,
    () =>
      inTurns(sides, Math.ceil(opts.warmup / FAST.duration), async () => {}),
  );
  const line = (name: string, ms: Measured[]) => {
    const m = medianRun(ms);
    return `${name}: ${fmt(m.rps)} req/s, p50 ${fmt(m.p50Ms, 2)} ms, p99 ${
      fmt(m.p99Ms, 2)
    } ms, CPU ${fmt(cpuPerRequest(ms), 1)} µs per request${
      m.errors ? ` (${m.errors} errors)` : ""
    }`;
  };
  console.log(line("service, defaults (access log on)", runs.log));
  console.log(line("service, LOG_LEVEL=warn (access log off)", runs.quiet));
  console.log(line("floor", runs.floor));
  const each = (a: Measured[], b: Measured[], f: (x: Measured) => number) =>
    ratioOf(a.map((x, i) => f(x) / f(b[i])));
  const cost = each(runs.log, runs.quiet, (m) => m.cpuUsPerRequest);
  // All rounds' CPU over all their requests: steadier than any one round.
  const overall = (ms: Measured[]) =>
    ms.reduce((sum, m) => sum + m.cpuUsPerRequest * m.requests, 0) /
    ms.reduce((sum, m) => sum + m.requests, 0);
  const vsFloor = each(runs.log, runs.floor, (m) => m.rps);
  const quietVsFloor = each(runs.quiet, runs.floor, (m) => m.rps);
  console.log(
    `access log's cost: CPU per request on/off ${
      cost.median.toFixed(3)
    } (median of the rounds; ${roundRange(cost)}); over all rounds ${
      fmt(overall(runs.log), 1)
    } / ${fmt(overall(runs.quiet), 1)} µs = ${
      (overall(runs.log) / overall(runs.quiet)).toFixed(3)
    }; floor ${fmt(overall(runs.floor), 1)} µs`,
  );
  console.log(
    `service/floor req/s, defaults: ${vsFloor.median.toFixed(2)} (${
      roundRange(vsFloor)
    }: ${roundList(vsFloor)})`,
  );
  console.log(
    `service/floor req/s, LOG_LEVEL=warn: ${quietVsFloor.median.toFixed(2)} (${
      roundRange(quietVsFloor)
    })`,
  );
  const inProcess = await logCostInProcess(db.url, sid);
  console.log(
    `access log's cost in one process (the app's own CPU, no HTTP server; ${inProcess.ratio.rounds.length} rounds of ${LOG_BLOCK} requests a side in turns): ${
      fmt(inProcess.log, 1)
    } / ${fmt(inProcess.quiet, 1)} µs = ${
      (inProcess.log / inProcess.quiet).toFixed(3)
    } over all rounds; median of the rounds ${
      inProcess.ratio.median.toFixed(3)
    } (${roundRange(inProcess.ratio)})`,
  );
  console.log(`load average at end: ${await load()}`);
}

/** Requests a side in each round of logCostInProcess. */
const LOG_BLOCK = 5_000;

/**
 * The access log's cost without a second process: two apps on one store,
 * one with the defaults' logger (its lines buffered and written to
 * /dev/null as they are to stdout) and one with `LOG_LEVEL=warn`, answer
 * `GET /api/auth/me` through `app.request`, 10 at a time, in alternating
 * blocks; each block's CPU time is this process's (getrusage). The two
 * sides share the process, its heap and its JIT, so what separates them is
 * the log alone; without the HTTP server's share of a request, the ratio
 * is an upper bound of the log's share of a served one.
 */
async function logCostInProcess(databaseUrl: string, sid: string) {
  const config = loadConfig({ DATABASE_URL: databaseUrl });
  const db = await openDatabase(config);
  const devNull = await Deno.open("/dev/null", { write: true });
  const sink = bufferedLines(devNull);
  try {
    const store = createStore(db.sql);
    const apps = {
      log: createApp({ store, config, log: createLogger("info", sink) }),
      quiet: createApp({ store, config, log: createLogger("warn") }),
    };
    // What Deno.serve hands the app: the peer the log line names.
    const env = {
      remoteAddr: { transport: "tcp", hostname: "127.0.0.1", port: 50_000 },
    };
    const init = { headers: { cookie: `sid=${sid}` } };
    const block = async (side: keyof typeof apps) => {
      const app = apps[side];
      const before = process.cpuUsage();
      let sent = 0;
      const client = async () => {
        while (sent++ < LOG_BLOCK) {
          const res = await app.request("/api/auth/me", init, env);
          await res.arrayBuffer();
          if (res.status !== 200) throw new Error(`me: ${res.status}`);
        }
      };
      await Promise.all(Array.from({ length: 10 }, client));
      const used = process.cpuUsage(before);
      return (used.user + used.system) / LOG_BLOCK;
    };
    for (let i = 0; i < 2; i++) {
      await block("log");
      await block("quiet");
    }
    const log: number[] = [];
    const quiet: number[] = [];
    for (let i = 0; i < 20; i++) {
      // Each side first in every other round.
      if (i % 2 === 0) {
        log.push(await block("log"));
        quiet.push(await block("quiet"));
      } else {
        quiet.push(await block("quiet"));
        log.push(await block("log"));
      }
    }
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    return {
      log: sum(log) / log.length,
      quiet: sum(quiet) / quiet.length,
      ratio: ratioOf(log.map((x, i) => x / quiet[i])),
    };
  } finally {
    await sink.flush();
    devNull.close();
    await db.close();
  }
}

// ---------------------------------------------------------------- floor pairs

/** The floor pairs' scenarios, as the full run names them. */
const listScenario = () => `GET /api/users (${fmt(opts.users)} users)`;
const ME_SCENARIO = "GET /api/auth/me";

/**
 * The note of a floor pair, as the full run writes it: the rounds' median
 * ratio and range, and each side's CPU per request (the Notes' first line
 * says how it is measured).
 */
const floorNote = (
  scenario: string,
  p: { ratio: Row["ratio"] & object; as: Measured[]; bs: Measured[] },
) =>
  `${scenario}: service/floor in ${FAST.rounds} rounds of ${FAST.duration} s a side: ${
    p.ratio.median.toFixed(2)
  } (${roundRange(p.ratio)}); ${
    cpuNote(p.as, p.bs, "service", "floor", false)
  }`;

/**
 * The share of its floor's requests a second a floor pair must reach: the
 * list, which is mostly the database's and the body's work, all but all
 * of it; `me`, whose floor skips the framework's few microseconds, less.
 */
const floorTarget = (r: Row) =>
  r.scenario.startsWith("GET /api/users (") ? 0.95 : 0.85;

/** The targets of a floor pair's row, as the full run writes them. */
const floorTargets = (r: Row): [string, string, boolean][] => [
  [
    `${r.scenario}: ≥ ${floorTarget(r)} × floor req/s`,
    `${r.ratio!.median.toFixed(2)} × (${fmt(r.service.rps)} vs ${
      fmt(r.floor!.rps)
    }; ${roundRange(r.ratio!)})`,
    r.ratio!.median >= floorTarget(r),
  ],
  [
    `${r.scenario}: p99 < 50 ms`,
    `${fmt(r.service.p99Ms, 1)} ms`,
    r.service.p99Ms < 50,
  ],
];

/** `--floor`: GET /api/users and GET /api/auth/me beside the floor, alone. */
async function floorOnly() {
  const wrkPath = await findWrk();
  console.log(`uptime at the start: ${await uptime()}`);
  await using db = await scratchDatabase("ua_bench");
  {
    // Migrates the empty database and creates the bench's admin.
    await using _first = await startService({ DATABASE_URL: db.url });
  }
  await seed(db.sql, opts.users);
  await using service = await startDefaults(db.url);
  await using floor = await startFloor(db.url);
  const sid = await login(service.baseUrl);
  await sameAnswer(service, floor, sid, "/api/users");
  await sameAnswer(service, floor, sid, "/api/auth/me");
  await sameAnswer(service, floor, sid, "/api/users", {
    "if-none-match": await listTag(service, sid),
  });
  console.log(
    "service and floor answer byte-identical bodies and the same headers",
  );
  const rows: Row[] = [];
  const notes: [string, string][] = [];
  for (
    const [scenario, path] of [
      [listScenario(), "/api/users"],
      [ME_SCENARIO, "/api/auth/me"],
    ]
  ) {
    say(`${scenario} ...`);
    const p = await paired(
      (over) => wrk(wrkPath, service, sid, { path, ...over }),
      (over) => wrk(wrkPath, floor, sid, { path, ...over }),
      undefined,
      FAST,
    );
    const row = { scenario, service: p.a, floor: p.b, ratio: p.ratio };
    rows.push(row);
    notes.push([scenario, floorNote(scenario, p)]);
    console.log(table([row]).split("\n")[2]);
  }
  const targets = rows.flatMap(floorTargets);
  console.log(`\n${table(rows)}\n`);
  for (const [, note] of notes) console.log(`- ${note}`);
  for (const [what, measured, met] of targets) {
    console.log(`${met ? "met" : "MISSED"}: ${what}: ${measured}`);
  }
  console.log(`uptime at the end: ${await uptime()}`);
  await rewriteFloorLines(rows, targets, notes);
}

/**
 * Rewrites in RESULTS.md the lines of these scenarios only: each one's table
 * row, its targets and its note (a note it lacks is added after the last
 * note above the kept marker). The file's other figures stay as they were.
 */
async function rewriteFloorLines(
  rows: Row[],
  targets: [string, string, boolean][],
  notes: [string, string][],
) {
  let text = await Deno.readTextFile(opts.out).catch(() => undefined);
  if (text === undefined) {
    console.log(`${opts.out} not found: nothing written`);
    return;
  }
  const lines = text.split("\n");
  const replaceRow = (starts: string, line: string) => {
    const i = lines.findIndex((l) =>
      l.startsWith(starts) && /^ *\|/.test(l.slice(starts.length))
    );
    if (i >= 0) lines[i] = line;
    return i >= 0;
  };
  for (const r of rows) {
    replaceRow(`| ${r.scenario}`, table([r]).split("\n")[2]);
  }
  for (const [t, m, ok] of targets) {
    replaceRow(`| ${t}`, `| ${t} | ${m} | ${ok ? "yes" : "**no**"} |`);
  }
  text = lines.join("\n");
  const kept = text.indexOf(KEPT_MARKER);
  let head = kept < 0 ? text : text.slice(0, kept);
  const tail = kept < 0 ? "" : text.slice(kept);
  for (const [scenario, note] of notes) {
    // A note runs from its "- " to the next bullet, blank line or heading.
    const at = head.search(
      new RegExp(`^- ${RegExp.escape(scenario)}: service/floor`, "m"),
    );
    if (at >= 0) {
      const end = head.slice(at + 2).search(/\n(?:- |\n|#)/);
      head = `${head.slice(0, at)}- ${note}${
        end < 0 ? "" : head.slice(at + 2 + end)
      }`;
    } else {
      head = `${head.trimEnd()}\n- ${note}\n\n`;
    }
  }
  await Deno.writeTextFile(opts.out, head + tail);
  await run(Deno.execPath(), ["fmt", opts.out]);
  console.log(`rewrote the lines of these scenarios in ${opts.out}`);
}

// ---------------------------------------------------------------- second factor

/** A TOTP code of the secret for now's 30-second step (RFC 6238, SHA-1, 6 digits). */
const totpNow = (secret: string) =>
  new TOTP({
    secret: Secret.fromBase32(secret),
    algorithm: "SHA1",
    digits: 6,
    period: 30,
  }).generate();

/**
 * `--mfa`: a login with a TOTP code beside one without (bcrypt dominates
 * both; target: at most 1 ms more), and `me` with a second-factored
 * session beside a session without a factor (target: the same), in turns.
 * A code is accepted once per step; the bench's trigger keeps the step
 * unused after each write, so every login checks and writes as a first use
 * of a step does.
 */
async function mfaOnly() {
  const wrkPath = await findWrk();
  console.log(`load average at start: ${await uptime()}`);
  await using db = await scratchDatabase("ua_bench");
  await using service = await startService({ DATABASE_URL: db.url });
  const sid = await login(service.baseUrl);
  const api = (path: string, body?: unknown, cookie = `sid=${sid}`) =>
    fetch(`${service.baseUrl}${path}`, {
      method: body === undefined ? "GET" : "POST",
      headers: { cookie, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    }).then(async (r) => ({ status: r.status, body: await r.json() }));
  const made = async (username: string) => {
    const password = `${username}-password`;
    const created = await api("/api/users", {
      username,
      name: username,
      email: `${username}@example.com`,
      password,
      role: "admin",
    });
    if (created.status !== 201) throw new Error(`create: ${created.status}`);
    return {
      username,
      password,
      sid: await sessionToken(service.baseUrl, { username, password }),
    };
  };
  const plain = await made("bench-plain");
  const factored = await made("bench-factored");
  const begun = await api("/api/auth/mfa/totp", {}, `sid=${factored.sid}`);
  const secret = begun.body.secret as string;
  const confirmed = await api(
    "/api/auth/mfa/totp/confirm",
    { code: totpNow(secret) },
    `sid=${factored.sid}`,
  );
  if (confirmed.status !== 200) throw new Error(`confirm: ${confirmed.status}`);
  await db.sql`
    create function bench_step_unused() returns trigger
    language plpgsql as $$ begin new.last_step := 0; return new; end $$`;
  await db.sql`
    create trigger bench_step_unused before update of last_step on mfa_totp
    for each row execute function bench_step_unused()`;
  await db.sql`update mfa_totp set last_step = 0`;
  // Every login with a code must be a right one: checked before, and
  // after through the counter of wrong ones (a refused code costs less).
  const probe = await fetch(`${service.baseUrl}/api/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      username: factored.username,
      password: factored.password,
      code: totpNow(secret),
    }),
  });
  await probe.body?.cancel();
  if (probe.status !== 200) {
    throw new Error(`login with a code: ${probe.status}`);
  }
  // The enrolling session counts as second-factored.
  say(
    "GET /api/auth/me, a second-factored session and one without a factor, in turns ...",
  );
  const me = await paired(
    (over) =>
      wrk(wrkPath, service, factored.sid, { path: "/api/auth/me", ...over }),
    (over) =>
      wrk(wrkPath, service, plain.sid, { path: "/api/auth/me", ...over }),
    undefined,
    FAST,
  );
  // The code is computed as each round starts: it stays valid for a step
  // either side, longer than a round.
  const loginLoad = (
    user: { username: string; password: string },
    code?: string,
  ): Load => ({
    path: "/api/auth/login",
    method: "POST",
    body: JSON.stringify({
      username: user.username,
      password: user.password,
      ...code ? { code } : {},
    }),
    connections: 4,
  });
  say("POST /api/auth/login with a TOTP code and without, in turns ...");
  const logins = await paired(
    (over) =>
      wrk(wrkPath, service, "", {
        ...loginLoad(factored, totpNow(secret)),
        ...over,
      }),
    (over) => wrk(wrkPath, service, "", { ...loginLoad(plain), ...over }),
  );
  // A code checked without bcrypt beside it: a step-up with a code (the
  // session's lookup, the code counted, checked, its step written, the
  // session marked, in a transaction of its own whose commit a login
  // shares with its session) beside `me` (the session's lookup alone),
  // one connection each.
  say(
    "POST /api/auth/step-up with a code beside GET /api/auth/me, one connection, in turns ...",
  );
  const stepUp = await paired(
    (over) =>
      wrk(wrkPath, service, factored.sid, {
        path: "/api/auth/step-up",
        method: "POST",
        body: JSON.stringify({ code: totpNow(secret) }),
        connections: 1,
        ...over,
      }),
    (over) =>
      wrk(wrkPath, service, factored.sid, {
        path: "/api/auth/me",
        connections: 1,
        ...over,
      }),
    undefined,
    FAST,
  );
  const [{ wrong }] = await db.sql<{ wrong: number }[]>`
    select coalesce(sum(failures), 0)::int as wrong from mfa_failures`;
  if (wrong > 0) throw new Error(`${wrong} codes were refused: no figure`);
  const rows: Row[] = [
    { scenario: "GET /api/auth/me (no factor)", service: me.b },
    { scenario: "GET /api/auth/me (second-factored session)", service: me.a },
    {
      scenario: "POST /api/auth/login (bcrypt) without a code",
      service: logins.b,
    },
    {
      scenario: "POST /api/auth/login (bcrypt) with a TOTP code",
      service: logins.a,
    },
  ];
  console.log(table(rows));
  // Latency per login at 4 connections: the difference of the medians of
  // the rounds' mean latency (connections / req/s), in ms.
  const meanMs = (runs: Measured[]) => median(runs.map((m) => 4_000 / m.rps));
  const extraMs = meanMs(logins.as) - meanMs(logins.bs);
  console.log(
    `- me, second-factored beside without: ${me.ratio.median.toFixed(2)} (${
      roundList(me.ratio)
    }); ${cpuNote(me.as, me.bs, "factored", "plain")}`,
  );
  console.log(
    `- login with a code beside without: ${logins.ratio.median.toFixed(3)} (${
      roundList(logins.ratio)
    }); mean time per login ${fmt(meanMs(logins.bs), 2)} ms without, ${
      fmt(meanMs(logins.as), 2)
    } ms with: ${extraMs.toFixed(2)} ms more; ${
      cpuNote(logins.as, logins.bs, "with", "without")
    }`,
  );
  const perRequest = (runs: Measured[]) =>
    median(runs.map((m) => 1_000 / m.rps));
  const codeMs = perRequest(stepUp.as) - perRequest(stepUp.bs);
  console.log(
    `- a step-up with a code beside me (one connection; the step-up's commit included, which a login's session shares): ${
      fmt(perRequest(stepUp.as), 2)
    } ms beside ${fmt(perRequest(stepUp.bs), 2)} ms a request: ${
      codeMs.toFixed(2)
    } ms; ${cpuNote(stepUp.as, stepUp.bs, "step-up", "me")}`,
  );
  console.log(
    `${
      extraMs <= 1 ? "met" : "MISSED"
    }: a login with a code costs at most 1 ms more: ${
      extraMs.toFixed(2)
    } ms (a step-up with a code, its commit included: ${
      codeMs.toFixed(2)
    } ms more than me)`,
  );
  console.log(
    `${
      me.ratio.median >= 0.95 ? "met" : "MISSED"
    }: me with a second-factored session as without (≥ 0.95): ${
      me.ratio.median.toFixed(2)
    }`,
  );
  console.log(`load average at end: ${await uptime()}`);
}

// ---------------------------------------------------------------- delegation

/**
 * `--delegation`: a person who holds five roles through three groups (no
 * role of their own: each permission comes through a membership) beside an
 * admin, in turns, on `--users` users: GET /api/auth/me and a page of the
 * list (`limit=100`). The permissions are read in the session's lookup
 * (src/db/grants.ts), an admin's without reading any assignment; target:
 * the delegated person's req/s at least 0.95 of the admin's (at most 5%
 * more cost).
 */
async function delegationOnly() {
  const wrkPath = await findWrk();
  const loadAtStart = await uptime();
  console.log(`load average at start: ${loadAtStart}`);
  await using db = await scratchDatabase("ua_bench");
  await using service = await startService({ DATABASE_URL: db.url });
  await seed(db.sql, opts.users);
  const sid = await login(service.baseUrl);
  const api = apiAs(service.baseUrl, sid);
  const person = {
    username: "bench-delegate",
    password: "bench-delegate-password",
  };
  const delegate = await api("POST", "/api/users", {
    ...person,
    name: "Bench Delegate",
    email: "bench-delegate@example.com",
    role: "viewer",
  });
  // Five roles of overlapping permissions; three groups give them.
  const roles = [
    ["users:read", "users:update"],
    ["users:read", "users:password", "users:sessions"],
    ["users:read", "users:disable"],
    ["audit:read", "users:read"],
    ["users:read", "users:export", "users:factors"],
  ];
  const roleIds: number[] = [];
  for (const [i, permissions] of roles.entries()) {
    roleIds.push(
      (await api("POST", "/api/roles", { name: `Bench ${i}`, permissions }))
        .id,
    );
  }
  const grants = [[0, 1], [2, 3], [4]];
  for (const [g, given] of grants.entries()) {
    const group = await api("POST", "/api/groups", {
      displayName: `Bench group ${g}`,
    });
    await api("POST", `/api/groups/${group.id}/members`, {
      userIds: [delegate.id],
    });
    for (const r of given) {
      await api("POST", "/api/assignments", {
        roleId: roleIds[r],
        groupId: group.id,
      });
    }
  }
  const held = await fetch(`${service.baseUrl}/api/auth/permissions`, {
    headers: {
      cookie: `sid=${await sessionToken(service.baseUrl, person)}`,
    },
  }).then((r) => r.json());
  const expected = [...new Set(roles.flat())].length;
  if (held.permissions?.length !== expected) {
    throw new Error(`the delegate holds ${JSON.stringify(held)}`);
  }
  const delegateSid = await sessionToken(service.baseUrl, person);
  const rows: Row[] = [];
  const notes: string[] = [];
  const targets: [string, number][] = [];
  /** The section's rows: one a request, both sides and their ratio. */
  const sectionRows: string[] = [];
  for (
    const [scenario, path] of [
      ["GET /api/auth/me", "/api/auth/me"],
      ["GET /api/users?limit=100", "/api/users?limit=100"],
    ]
  ) {
    say(`${scenario}, five roles through three groups beside an admin ...`);
    const p = await paired(
      (over) => wrk(wrkPath, service, delegateSid, { path, ...over }),
      (over) => wrk(wrkPath, service, sid, { path, ...over }),
      undefined,
      FAST,
    );
    rows.push({ scenario: `${scenario} (admin)`, service: p.b });
    rows.push({
      scenario: `${scenario} (five roles through three groups)`,
      service: p.a,
    });
    notes.push(
      `${scenario}, delegated beside admin: ${p.ratio.median.toFixed(2)} (${
        roundList(p.ratio)
      }); ${cpuNote(p.as, p.bs, "delegated", "admin")}`,
    );
    targets.push([scenario, p.ratio.median]);
    sectionRows.push(
      `| ${scenario} | ${fmt(p.b.rps)} | ${fmt(p.a.rps)} | ${
        fmt(p.b.p99Ms, 1)
      }, ${fmt(p.a.p99Ms, 1)} | ${fmt(cpuPerRequest(p.bs))}, ${
        fmt(cpuPerRequest(p.as))
      } | ${p.ratio.median.toFixed(2)} (${roundRange(p.ratio)}) | ${
        p.ratio.median >= 0.95 ? "yes" : "**no**"
      } |`,
    );
  }
  console.log(table(rows));
  for (const note of notes) console.log(`- ${note}`);
  for (const [scenario, ratio] of targets) {
    console.log(
      `${
        ratio >= 0.95 ? "met" : "MISSED"
      }: ${scenario} for a person holding five roles through three groups costs at most 5% more than for an admin (≥ 0.95): ${
        ratio.toFixed(2)
      }`,
    );
  }
  const loadAtEnd = await uptime();
  console.log(`load average at end: ${loadAtEnd}`);
  await writeSection(
    [
      DELEGATION_HEADING,
      "",
      `\`deno task bench --delegation\` (${
        fmt(opts.users)
      } users; one service, a person of five roles via three groups beside an admin, in turns). \`uptime\`: \`${loadAtStart}\`, then \`${loadAtEnd}\`.`,
      "",
      `| request | admin req/s | delegated req/s | p99 ms: admin, delegated | CPU µs a request: admin, delegated | delegated/admin, median of ${FAST.rounds} rounds of ${FAST.duration} s | met (≥ 0.95) |`,
      "|---|--:|--:|--:|--:|--:|---|",
      ...sectionRows,
      "",
    ].join("\n"),
  );
}

const DELEGATION_HEADING = "## Delegated administration";

// ---------------------------------------------------------------- webhooks

const WEBHOOKS_HEADING = "## Webhooks beside hanging receivers";
const HANGING = 10;

/**
 * The receivers of the webhook bench: `/healthy` answers 204 at once and
 * keeps the milliseconds from each record's time to its arrival; the
 * hanging ones, on a port of their own, read each request and never
 * answer, until the sender gives up and closes the connection.
 */
function webhookReceiver() {
  const latencies: number[] = [];
  let count = 0;
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (req) => {
      const message = JSON.parse(await req.text());
      latencies.push(Date.now() - Date.parse(message.data.time));
      count++;
      return new Response(null, { status: 204 });
    },
  );
  const silent = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held = new Set<Deno.Conn>();
  const holding = (async () => {
    for await (const conn of silent) {
      held.add(conn);
      (async () => {
        const buffer = new Uint8Array(64 * 1024);
        try {
          while (await conn.read(buffer) !== null) { /* never answered */ }
        } catch { /* closed */ }
        held.delete(conn);
        conn.close();
      })();
    }
  })().catch(() => {});
  return {
    healthyUrl: `http://127.0.0.1:${server.addr.port}/healthy`,
    hangingUrl: (i: number) => `http://127.0.0.1:${silent.addr.port}/hang/${i}`,
    latencies,
    get count() {
      return count;
    },
    /** Connections held open by the hanging receivers right now. */
    get hanging() {
      return held.size;
    },
    async close() {
      silent.close();
      for (const conn of held) conn.close();
      await holding;
      await server.shutdown();
    },
  };
}

const percentile = (xs: number[], p: number) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
};

/**
 * `--webhooks`: ten endpoints whose receivers hang until the delivery's
 * timeout (10 s) beside one healthy one. PATCH with those 11 attached
 * beside the same PATCH with none, in turns (target 0.85), and the delay
 * from a record's time (written in its transaction) to its arrival at the
 * healthy receiver, for paced writes (target p99 < 1 s) and under wrk's
 * load. Writes its section of RESULTS.md.
 */
async function webhooksBench() {
  const wrkPath = await findWrk();
  const uptimeAtStart = await uptime();
  await using db = await scratchDatabase("ua_bench");
  const { url: databaseUrl, sql } = db;
  const receiver = webhookReceiver();
  try {
    const env = {
      DATABASE_URL: databaseUrl,
      WEBHOOK_ALLOW_PRIVATE: "true",
      // A hanging endpoint is tried again a second after its timeout, so
      // that it hangs nearly all along.
      WEBHOOK_RETRY_SCHEDULE: "1000",
    };
    {
      await using _first = await startService(env);
    }
    await seed(sql, Math.max(opts.users, 300));
    await using service = await startService(env);
    const sid = await login(service.baseUrl);
    const call = async (path: string, init: RequestInit = {}) => {
      const res = await fetch(service.baseUrl + path, {
        ...init,
        headers: { cookie: `sid=${sid}`, ...init.headers },
      });
      const body = await res.json();
      if (!res.ok) throw new Error(`${path}: ${res.status} ${body.error}`);
      return body;
    };
    const attach = async () => {
      const ids: number[] = [];
      const urls = [
        receiver.healthyUrl,
        ...Array.from({ length: HANGING }, (_, i) => receiver.hangingUrl(i)),
      ];
      for (const url of urls) {
        const hook = await call("/api/webhooks", {
          method: "POST",
          body: JSON.stringify({ url }),
        });
        ids.push(hook.id);
      }
      return ids;
    };
    const detach = async (ids: number[]) => {
      for (const id of ids) {
        await call(`/api/webhooks/${id}`, { method: "DELETE" });
      }
    };
    const targets = await viewerTargets(sql);
    const head = async () =>
      Number(
        (await sql<{ n: string }[]>`
          select head_id::text as n from audit_chain where singleton`)[0].n,
      );
    const flips = roleFlips(targets);
    const lag: string[] = [];
    const patchRun = (attached: boolean) => async (over?: Partial<Load>) => {
      await asViewers(sql, targets);
      const ids = attached ? await attach() : [];
      const before = receiver.count;
      const headBefore = await head();
      const m = await wrk(wrkPath, service, sid, { ...flips, ...over });
      if (attached) {
        lag.push(
          `${(await head()) - headBefore}/${receiver.count - before}`,
        );
        // Their backlog is not delivered into the other side's run.
        await detach(ids);
      }
      return m;
    };
    say(
      `PATCH with ${
        HANGING + 1
      } webhook endpoints attached (${HANGING} hanging) and with none, in turns ...`,
    );
    const p = await paired(patchRun(true), patchRun(false));

    say(
      `delivery latency beside ${HANGING} hanging receivers, paced writes (one PATCH each 20 ms) ...`,
    );
    const ids = await attach();
    const healthy = ids[0];
    const until = Date.now() + 30_000;
    while (receiver.hanging < HANGING && Date.now() < until) await sleep(50);
    const hangingAtStart = receiver.hanging;
    await asViewers(sql, targets);
    const quietFrom = receiver.latencies.length;
    const paced = 500;
    for (let i = 0; i < paced; i++) {
      await call(`/api/users/${targets[i % targets.length]}`, {
        method: "PATCH",
        body: JSON.stringify({
          role: (i / targets.length) % 2 < 1 ? "admin" : "viewer",
        }),
      });
      await sleep(20);
    }
    const drained = async () => {
      const until = Date.now() + 120_000;
      for (;;) {
        const [e] = await sql<{ cursor: string }[]>`
          select cursor::text from webhook_endpoints where id = ${healthy}`;
        if (Number(e.cursor) >= await head() || Date.now() > until) return;
        await sleep(50);
      }
    };
    await drained();
    const hangingAtEnd = receiver.hanging;
    const quiet = receiver.latencies.slice(quietFrom);
    say("delivery latency under wrk's PATCH load ...");
    const loadedFrom = receiver.latencies.length;
    await wrk(wrkPath, service, sid, flips);
    await drained();
    const loaded = receiver.latencies.slice(loadedFrom);

    const ms = (xs: number[], q: number) => `${fmt(percentile(xs, q))} ms`;
    const latency = (xs: number[]) =>
      `p50 ${ms(xs, 0.5)}, p99 ${ms(xs, 0.99)}, max ${ms(xs, 1)}`;
    const run = (m: Measured) =>
      `${fmt(m.rps)} req/s (p50 ${fmt(m.p50Ms, 1)} ms, p99 ${
        fmt(m.p99Ms, 1)
      } ms)`;
    const yes = (met: boolean) => met ? "yes" : "**no**";
    const section = [
      WEBHOOKS_HEADING,
      "",
      "`deno task bench --webhooks` (PostgreSQL on the same machine, the " +
      `service with its default 10 s delivery timeout; ${HANGING} endpoints ` +
      "whose receivers answer only when the delivery gives up, tried again " +
      "1 s after each failure, beside one answering 204 at once; all of " +
      `them take every record). \`uptime\` at the start: \`${uptimeAtStart}\`; ` +
      `at the end: \`${await uptime()}\`.`,
      "",
      "| measure | figure | target | met |",
      "|---|---|---|---|",
      `| PATCH /api/users/:id (role flips), ${
        HANGING + 1
      } endpoints attached | ${run(p.a)} | | |`,
      `| the same, no endpoint | ${run(p.b)} | | |`,
      `| attached/none, median of ${opts.rounds} rounds of ${opts.duration} s a side in turns | ${
        p.ratio.median.toFixed(2)
      } (rounds ${roundList(p.ratio)}) | ≥ 0.85 | ${
        yes(p.ratio.median >= 0.85)
      } |`,
      `| delivery to the healthy endpoint, paced writes (${quiet.length} records, one PATCH each 20 ms; connections held by hanging receivers: ${hangingAtStart} at the start, ${hangingAtEnd} at the end) | ${
        latency(quiet)
      } | p99 < 1 s | ${yes(percentile(quiet, 0.99) < 1000)} |`,
      `| the same under wrk's PATCH load (${loaded.length} records in ${opts.duration} s) | ${
        latency(loaded)
      } | | |`,
      "",
      `- ${cpuNote(p.as, p.bs, "attached", "none")}`,
      `- records written/delivered to the healthy endpoint during each attached run: ${
        lag.join(", ")
      }`,
      "",
    ].join("\n");
    await writeSection(section);
    console.log(`\n${section}\nwrote ${opts.out}`);
  } finally {
    await receiver.close();
  }
}

// ---------------------------------------------------------------- import

/**
 * `--import`: `--import-users` users (100,000 by default) with bcrypt
 * hashes given, as one NDJSON body generated as it is sent (never whole in
 * memory), into a service on a fresh database: the upload, the job, and
 * the seal of the last `user.created` record (records included), the
 * service's peak RSS over it all; beside it, POST /api/users one at a
 * time from 4 clients for a few seconds (bcrypt-bound). Writes its section
 * of RESULTS.md.
 */
async function importBench() {
  const uptimeAtStart = await uptime();
  const n = opts.importUsers;
  await using db = await scratchDatabase("ua_bench_import");
  const env = { DATABASE_URL: db.url };
  {
    await using _first = await startService(env);
  }
  await using service = await startService(env);
  const sid = await login(service.baseUrl);
  const cookie = `sid=${sid}`;
  // One hash for all (cost 10, as the service's own): the import never checks it.
  const hash = "$2b$10$rL60lBa65WZtYM2QmI89X.WlfUKG2zn/R.cpZa33.2kUZ6IEAd3SO";
  const encoder = new TextEncoder();
  const PER_CHUNK = 500;
  let made = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (made >= n) return controller.close();
      let text = "";
      for (let i = 0; i < PER_CHUNK && made < n; i++, made++) {
        text += JSON.stringify({
          username: `imported${made}`,
          name: `Imported User ${made}`,
          email: `imported${made}@example.com`,
          passwordHash: hash,
        }) + "\n";
      }
      controller.enqueue(encoder.encode(text));
    },
  });
  await resetPeak(service.pid);
  const idle = await memory(service.pid);
  const started = performance.now();
  // In the pieces `deno task import` sends (see uploadChunks).
  const res = await fetch(`${service.baseUrl}/api/imports`, {
    method: "POST",
    headers: { cookie, "content-type": "application/x-ndjson" },
    body: body.pipeThrough(uploadChunks()),
  });
  const accepted = await res.json();
  if (res.status !== 202) {
    throw new Error(`import refused: ${res.status} ${accepted.error}`);
  }
  const uploaded = performance.now();
  say(`${fmt(n)} records stored in ${fmt((uploaded - started) / 1000, 1)} s`);
  const rss: number[] = [];
  let status;
  for (;;) {
    const r = await fetch(`${service.baseUrl}/api/imports/${accepted.id}`, {
      headers: { cookie },
    });
    status = await r.json();
    rss.push((await memory(service.pid)).rss);
    if (status.status !== "queued" && status.status !== "running") break;
    await sleep(200);
  }
  const processed = performance.now();
  say(
    `RSS while the job ran (MiB, every 200 ms): ${
      rss.filter((_, i) => i % Math.max(1, Math.floor(rss.length / 20)) === 0)
        .map((k) => fmt(mib(k))).join(" ")
    }`,
  );
  if (status.status !== "finished" || status.created !== n) {
    throw new Error(`import ended ${JSON.stringify(status)}`);
  }
  for (;;) {
    const [{ pending }] = await db.sql<{ pending: number }[]>`
      select count(*)::int as pending from audit_pending`;
    if (pending === 0) break;
    await sleep(100);
  }
  const sealed = performance.now();
  const [{ records }] = await db.sql<{ records: number }[]>`
    select count(*)::int as records from audit_events
    where action = 'user.created'`;
  const peak = await memory(service.pid);
  say(
    `job done at ${fmt((processed - started) / 1000, 1)} s, records sealed at ${
      fmt((sealed - started) / 1000, 1)
    } s`,
  );

  // POST /api/users one at a time, 4 clients: the rate an import replaces.
  const singleMs = 5_000;
  let singles = 0;
  const until = performance.now() + singleMs;
  const singleStart = performance.now();
  await Promise.all(Array.from({ length: 4 }, async (_, c) => {
    for (let i = 0; performance.now() < until; i++) {
      const r = await fetch(`${service.baseUrl}/api/users`, {
        method: "POST",
        headers: { cookie, "content-type": "application/json" },
        body: JSON.stringify({
          username: `single${c}x${i}`,
          name: "Single",
          email: `single${c}x${i}@example.com`,
          password: "single-password",
          role: "viewer",
        }),
      });
      await r.body?.cancel();
      if (r.status === 201) singles++;
    }
  }));
  const singleRate = singles / ((performance.now() - singleStart) / 1000);

  const total = (sealed - started) / 1000;
  const rate = n / total;
  const section = [
    `## Importing ${fmt(n)} users`,
    "",
    `\`deno task bench --import --import-users ${n}\` (PostgreSQL on the same ` +
    "machine; one NDJSON body of users with bcrypt hashes given, generated as " +
    "it is sent; the service with its defaults). `uptime` at the start: " +
    `\`${uptimeAtStart}\`; at the end: \`${await uptime()}\`.`,
    "",
    "| measure | figure | target | met |",
    "|---|---|---|---|",
    `| body stored (202) | ${fmt((uploaded - started) / 1000, 1)} s | | |`,
    `| job finished | ${fmt((processed - started) / 1000, 1)} s | | |`,
    `| every \`user.created\` record sealed (${fmt(records)} records) | ${
      fmt(total, 1)
    } s | | |`,
    `| users a second, records included | ${fmt(rate)} | ≥ 5,000 | ${
      rate >= 5000 ? "yes" : "**no**"
    } |`,
    `| service RSS: before, highest sampled while the job ran, peak (VmHWM) | ${
      fmt(mib(idle.rss))
    } MiB, ${fmt(mib(Math.max(...rss)))} MiB, ${
      fmt(mib(peak.hwm))
    } MiB | flat | |`,
    `| POST /api/users one at a time (bcrypt, 4 clients, ${
      singleMs / 1000
    } s) | ${fmt(singleRate, 1)} users/s | | |`,
    "",
  ].join("\n");
  await writeSection(section);
  console.log(`\n${section}\nwrote ${opts.out}`);
}

function say(what: string) {
  console.log(what);
}

/**
 * The change feed's fan-out: `--sse-streams` streams open on one instance,
 * `--sse-records` records written one after the other through a second
 * instance on the same database (a role change each, no bcrypt), so each
 * travels by the seal's notification. Prints the delay from sending the
 * write to each stream's receipt of its event (p50, p99, max; the target
 * is every one within 1 s) and the first instance's RSS growth per open
 * stream.
 */
async function sseFanOut() {
  await using db = await scratchDatabase("ua_bench");
  const env = { DATABASE_URL: db.url, LOG_LEVEL: "warn" };
  await using reader = await startService(env);
  await using writer = await startService(env);
  const sid = await login(reader.baseUrl);
  const writerSid = await login(writer.baseUrl);
  const created = await fetch(`${writer.baseUrl}/api/users`, {
    method: "POST",
    headers: { cookie: `sid=${writerSid}` },
    body: JSON.stringify({
      username: "sse-target",
      name: "SSE target",
      email: "sse-target@example.com",
      password: "sse-target-password",
      role: "viewer",
    }),
  });
  const { id: target } = await created.json();

  const before = await memory(reader.pid);
  /** Per stream: when each record id arrived. */
  const arrivals: Map<number, number>[] = [];
  const aborts = new AbortController();
  for (let i = 0; i < opts.sseStreams; i++) {
    const res = await fetch(`${reader.baseUrl}/api/audit/stream`, {
      headers: { cookie: `sid=${sid}` },
      signal: aborts.signal,
    });
    if (res.status !== 200) throw new Error(`stream: ${res.status}`);
    const seen = new Map<number, number>();
    arrivals.push(seen);
    (async () => {
      let buffer = "";
      try {
        for await (const chunk of res.body!) {
          buffer += decoder.decode(chunk, { stream: true });
          for (const m of buffer.matchAll(/^id: (\d+)$/gm)) {
            if (!seen.has(Number(m[1]))) {
              seen.set(Number(m[1]), performance.now());
            }
          }
          buffer = buffer.slice(buffer.lastIndexOf("\n") + 1);
        }
      } catch { /* aborted at the end */ }
    })();
  }
  await sleep(1000);
  const open = await memory(reader.pid);
  const perStreamKiB = (open.rss - before.rss) / opts.sseStreams;

  const delays: number[] = [];
  let late = 0;
  const roles = ["admin", "viewer"];
  for (let k = 0; k < opts.sseRecords; k++) {
    const sent = performance.now();
    const res = await fetch(`${writer.baseUrl}/api/users/${target}`, {
      method: "PATCH",
      headers: { cookie: `sid=${writerSid}` },
      body: JSON.stringify({ role: roles[k % 2] }),
    });
    if (res.status !== 200) throw new Error(`PATCH: ${res.status}`);
    await res.body?.cancel();
    // The record's id: the newest any stream has seen after the write.
    const deadline = sent + 5000;
    let id = 0;
    while (performance.now() < deadline) {
      const newest = Math.max(
        0,
        ...arrivals.flatMap((s) =>
          [...s].filter(([, t]) => t >= sent).map(([i]) => i)
        ),
      );
      if (newest && arrivals.every((s) => s.has(newest))) {
        id = newest;
        break;
      }
      await sleep(5);
    }
    if (!id) throw new Error(`record ${k}: not on every stream in 5 s`);
    for (const s of arrivals) {
      const delay = s.get(id)! - sent;
      delays.push(delay);
      if (delay > 1000) late++;
    }
  }
  aborts.abort();
  delays.sort((a, b) => a - b);
  const at = (q: number) =>
    delays[Math.min(delays.length - 1, Math.floor(q * delays.length))];
  console.log(
    `change feed fan-out: ${opts.sseStreams} streams on one instance, ${opts.sseRecords} records written through another\n` +
      `  delay from sending the write to each stream's receipt: p50 ${
        fmt(at(0.5), 1)
      } ms, p99 ${fmt(at(0.99), 1)} ms, max ${
        fmt(delays.at(-1)!, 1)
      } ms; later than 1 s: ${late} of ${delays.length}\n` +
      `  RSS of the streams' instance: ${fmt(mib(before.rss), 1)} MiB before, ${
        fmt(mib(open.rss), 1)
      } MiB with the streams open: ${fmt(perStreamKiB, 1)} KiB per stream`,
  );
}

if (Deno.args.includes("--million")) await million();
else if (Deno.args.includes("--access-log")) await accessLog();
else if (Deno.args.includes("--import")) await importBench();
else if (opts.against !== undefined) await against(opts.against);
else if (Deno.args.includes("--webhooks")) await webhooksBench();
else if (Deno.args.includes("--sse")) await sseFanOut();
else if (Deno.args.includes("--keys")) await keysOnly();
else if (Deno.args.includes("--mfa")) await mfaOnly();
else if (Deno.args.includes("--delegation")) await delegationOnly();
else if (Deno.args.includes("--floor")) await floorOnly();
else await main();
