/**
 * Upgrades that roll: an older release serves on a database, this checkout
 * starts on the same database and migrates it, and the older instance keeps
 * answering correctly beside it (logins, the list, creates, role and
 * password changes, deletions, logouts), sessions made on either work on
 * the other, and the audit trail both write to stays one verifiable chain.
 *
 * The older releases come from git: each is the newest commit before a
 * migration file was added, built into a temporary directory (git archive,
 * then deno install) and started there as its own `deno run main.ts`.
 * Only on a PostgreSQL server (DATABASE_URL): the embedded PGlite belongs to
 * one process. Without the git history (no git, a shallow clone) the test
 * is ignored, saying why; under CI=true it fails instead.
 */
import { createUserAdminClient } from "@user-admin/client";
import { auditVerify } from "../src/cli/audit-verify.ts";
import { loadConfig } from "../src/config.ts";
import { createLogger } from "../src/log.ts";
import { startService } from "../src/server.ts";
import { assert, assertEquals } from "./support/assert.ts";
import { IN_CI, postgresOnly } from "./support/conditions.ts";
import { type Instance, runTask, spawnServer } from "./support/process.ts";
import {
  ADMIN,
  loginCookie as loginOver,
  newUser,
  ON_EMBEDDED,
  testDatabase,
} from "./support/service.ts";

const ROOT = new URL("../", import.meta.url);
const MIGRATIONS = "src/db/migrations";

/** Runs a command to completion in `cwd`: its output; throws with its stderr. */
async function run(command: string, args: string[], cwd: string | URL) {
  const out = await new Deno.Command(command, {
    args,
    cwd,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  if (!out.success) {
    throw new Error(
      `${command} ${args.join(" ")}: ${text.decode(out.stderr).trim()}`,
    );
  }
  return text.decode(out.stdout).trim();
}

/** Runs git in this checkout. */
const git = (...args: string[]) => run("git", args, ROOT);

/** The migration files of this checkout, oldest first. */
async function migrationFiles(): Promise<string[]> {
  const names = [];
  for await (const entry of Deno.readDir(new URL(`${MIGRATIONS}/`, ROOT))) {
    if (/^\d+_.+\.(sql|ts)$/.test(entry.name)) names.push(entry.name);
  }
  return names.sort((a, b) => parseInt(a) - parseInt(b));
}

/**
 * The release that ran without `file`: the newest commit before the one
 * that added it, or HEAD while the file is not committed yet.
 */
async function releaseBefore(file: string): Promise<string> {
  const added = await git(
    "log",
    "--no-renames",
    "--diff-filter=A",
    "--format=%H",
    "-1",
    "--",
    `${MIGRATIONS}/${file}`,
  );
  return await git("rev-parse", "--verify", added ? `${added}^` : "HEAD");
}

interface Releases {
  /** The newest commit before the newest migration: what a deploy replaces. */
  previous: string;
  /** The newest commit before migration 008 (the audit seal). */
  beforeSeal: string;
}

/** Both releases from git, or why they cannot be found. */
async function findReleases(): Promise<Releases | string> {
  try {
    if (await git("rev-parse", "--is-shallow-repository") === "true") {
      return "a shallow clone: the releases need the full history (git fetch --unshallow, or fetch-depth: 0)";
    }
    const files = await migrationFiles();
    const seal = files.find((name) => name.startsWith("008_"));
    if (!seal) return `no migration 008 in ${MIGRATIONS}`;
    return {
      previous: await releaseBefore(files.at(-1)!),
      beforeSeal: await releaseBefore(seal),
    };
  } catch (e) {
    return (e as Error).message;
  }
}

const releases = ON_EMBEDDED ? undefined : await findReleases();

/**
 * A test of an older release: PostgreSQL only; without the releases from
 * git, ignored saying why, or under CI=true a failure naming it.
 */
function withRelease(
  name: string,
  pick: (r: Releases) => string,
): Deno.TestDefinition {
  const once = postgresOnly(name);
  if (once.ignore) return { ...once, fn() {} };
  if (typeof releases === "string") {
    if (!IN_CI) {
      return { name: `${name} (ignored: ${releases})`, ignore: true, fn() {} };
    }
    return {
      name,
      fn() {
        throw new Error(
          `the releases are not in git, and CI=true: ${releases}`,
        );
      },
    };
  }
  return { name, fn: () => rollingUpgrade(pick(releases!)) };
}

const NO_NODE_MODULES = "--node-modules-dir=none";

/** A commit's files in a temporary directory, with its packages installed. */
async function build(commit: string) {
  const dir = await Deno.makeTempDir({ prefix: "user-admin-release-" });
  try {
    // The tracked files of the commit (about 1.4 MB).
    const tar = `${dir}.tar`;
    await git("archive", "--format=tar", `--output=${tar}`, commit);
    try {
      await run("tar", ["-x", "-f", tar, "-C", dir], dir);
    } finally {
      await Deno.remove(tar);
    }
    // Its packages as its lock pins them, run from Deno's cache: a
    // node_modules of its own is thousands of files to write and remove
    // for the same modules.
    await run(Deno.execPath(), ["install", "--frozen", NO_NODE_MODULES], dir);
    return {
      dir,
      [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }),
    };
  } catch (e) {
    await Deno.remove(dir, { recursive: true });
    throw e;
  }
}

/** Logs in over HTTP at `baseUrl`: the session's cookie (`sid=...`). */
const loginCookie = (
  baseUrl: string,
  credentials: { username: string; password: string },
) =>
  loginOver(
    { fetch: (path, init) => fetch(baseUrl + path, init) },
    credentials,
  );

async function rollingUpgrade(commit: string) {
  await using release = await build(commit);
  await using db = await testDatabase("empty");
  const env = {
    ...db.env,
    HOST: "127.0.0.1",
    ADMIN_USERNAME: ADMIN.username,
    ADMIN_PASSWORD: ADMIN.password,
  };
  // The older release first: it migrates the fresh database as far as it
  // knows and creates the first admin.
  await using old: Instance = await spawnServer(
    ["run", "-A", NO_NODE_MODULES, "main.ts"],
    { ...env, LOG_LEVEL: "warn" },
    60_000,
    release.dir,
  );
  // Then this checkout on the same database: it applies the newer migrations.
  const logs: string[] = [];
  const current = await startService(
    loadConfig({ ...env, PORT: "0", LOG_LEVEL: "warn" }),
    { log: createLogger("warn", (line) => void logs.push(line)) },
  );
  try {
    const on = (baseUrl: string, cookie: string) =>
      createUserAdminClient({ baseUrl, headers: { cookie } });
    /** What the older instance logged, shown when one of its answers is wrong. */
    const oldSays = () =>
      `${commit.slice(0, 7)} logged:\n${
        old.lines.map((l) => JSON.stringify(l)).join("\n")
      }\n${old.stderr()}`;
    const oldStatus = (
      answer: { status: number; error?: unknown },
      status: number,
      what: string,
    ) =>
      assertEquals(
        answer.status,
        status,
        `${what} on the older release: ${answer.error}\n${oldSays()}`,
      );

    // Logins on both, each session used on the other.
    const adminOld = await loginCookie(old.baseUrl, ADMIN).catch((e) => {
      throw new Error(`${e.message} on the older release\n${oldSays()}`);
    });
    const adminNew = await loginCookie(current.url, ADMIN);
    const oldAdmin = on(old.baseUrl, adminOld);
    const newAdmin = on(current.url, adminNew);
    oldStatus(await on(old.baseUrl, adminNew).me(), 200, "a current session");
    assertEquals((await on(current.url, adminOld).me()).status, 200);

    // The older instance writes, the current one writes in between: the
    // audit trail gets both kinds of record interleaved.
    const list = await oldAdmin.get("/api/users");
    oldStatus(list, 200, "the list");
    assert(list.ok && list.data.some((u) => u.username === ADMIN.username));
    const carol = await oldAdmin.post("/api/users", {
      body: newUser("carol"),
    });
    oldStatus(carol, 201, "a create");
    assert(carol.ok);
    const id = carol.data.id;
    assertEquals(
      (await newAdmin.post("/api/users", { body: newUser("dave") })).status,
      201,
    );
    const promoted = await oldAdmin.patch("/api/users/{id}", {
      params: { path: { id } },
      body: { role: "admin" },
    });
    oldStatus(promoted, 200, "a role change");
    assertEquals(promoted.ok && promoted.data.role, "admin");

    // Carol's session from the current instance, as an admin on the older one.
    const carolNew = await loginCookie(current.url, {
      username: "carol",
      password: "carol-password",
    });
    oldStatus(
      await on(old.baseUrl, carolNew).get("/api/users"),
      200,
      "a role change seen with a current session",
    );

    // A reset on the older instance ends her sessions on both.
    const reset = await oldAdmin.patch("/api/users/{id}", {
      params: { path: { id } },
      body: { password: "carol-new-password" },
    });
    oldStatus(reset, 200, "a password reset");
    for (const baseUrl of [old.baseUrl, current.url]) {
      assertEquals((await on(baseUrl, carolNew).me()).status, 401, baseUrl);
    }
    const carolOld = await loginCookie(old.baseUrl, {
      username: "carol",
      password: "carol-new-password",
    }).catch((e) => {
      throw new Error(`${e.message} on the older release\n${oldSays()}`);
    });
    const me = await on(current.url, carolOld).me();
    assertEquals(me.ok && me.data.username, "carol");

    // A deletion on the older instance ends her session everywhere.
    oldStatus(
      await oldAdmin.delete("/api/users/{id}", { params: { path: { id } } }),
      200,
      "a deletion",
    );
    assertEquals((await on(current.url, carolOld).me()).status, 401);
    const users = await newAdmin.get("/api/users");
    assertEquals(
      users.ok && users.data.map((u) => u.username),
      [ADMIN.username, "dave"],
    );

    // A logout on the older instance ends the session on the current one.
    oldStatus(await oldAdmin.post("/api/auth/logout"), 200, "a logout");
    assertEquals((await on(current.url, adminOld).me()).status, 401);

    // Every record of both is in the trail, in order, and the chain verifies.
    const trail = await newAdmin.get("/api/audit", {
      params: { query: { targetId: id } },
    });
    assert(trail.ok, `the trail: ${trail.status}`);
    assertEquals(trail.data.map((r) => r.action).reverse(), [
      "user.created",
      "user.role_changed",
      "login.succeeded",
      "user.password_reset",
      "login.succeeded",
      "user.deleted",
    ]);
    const verified = await runTask(auditVerify, [], db.env);
    assertEquals(verified.code, 0, verified.stderr);
    const [{ n }] = await current.sql<{ n: number }[]>`
      select count(*)::int as n from audit_events`;
    assertEquals(
      verified.stdout.match(/^Audit trail intact: (\d+) records/)?.[1],
      String(n),
      verified.stdout,
    );
    assertEquals(logs, [], "the current instance logged no warning or error");
    assertEquals(
      old.lines,
      [],
      "the older instance logged no warning or error",
    );
  } finally {
    await current.close();
  }
}

Deno.test(withRelease(
  "the previous release (the newest commit before the newest migration) keeps logging in, listing, creating, changing and deleting beside the current code on one database; sessions work across both; the audit trail verifies",
  (r) => r.previous,
));

Deno.test(withRelease(
  "the release before the audit seal (migration 008) keeps working beside the current code on one database; its audit records join the same chain",
  (r) => r.beforeSeal,
));
