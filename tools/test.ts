/**
 * `deno task test [deno test options and paths]`: `deno test -A --parallel
 * tests/` but tests/alone/, then `deno test tests/alone/` one file at a
 * time (or only the paths given, together), with deno test's own output
 * and exit code, then one line naming how many tests were skipped, why, and
 * how to run them, taken from the reason each ignored test's name ends with
 * in parentheses (tests/support/conditions.ts). An ignored test whose name
 * gives no reason fails the run.
 *
 * Parallel test files: DENO_JOBS if set, else one per core on the embedded
 * database and one more on PostgreSQL. Each file that starts the embedded
 * database holds PGlite instances of its own (hundreds of MiB each), and
 * its work is mostly CPU: more files at once than cores multiply the peak
 * memory for nothing. On PostgreSQL a file waits much of its time (for the
 * server, other processes, sockets and timers), which another file's work
 * fills. The garbage collector is exposed so that tests/support/service.ts
 * can hand a closed PGlite's memory back before the next one starts.
 *
 * The run leaves nothing behind (tests/support/test-run.ts): its files
 * get a temporary directory of the run's own, and the databases they make
 * on the server carry the run's id; both are removed when deno test ends,
 * an interrupted run (Ctrl-C, SIGTERM) included.
 *
 * The test modules are type-checked beside the run (`deno check tests/`,
 * whose failure fails the run), not before it, where deno test would keep
 * one core busy and the other idle before the first test starts.
 */
import { beginRun, endRun, RUN_ID } from "../tests/support/test-run.ts";
import { HOW_TO_RUN } from "../tests/support/skip-reasons.ts";

const cores = navigator.hardwareConcurrency;
const jobs = Deno.env.get("DENO_JOBS") ??
  String(Deno.env.get("DATABASE_URL") ? cores + 1 : cores);
const checking = new Deno.Command(Deno.execPath(), {
  args: ["check", "--quiet", "tests/"],
  stdout: "piped",
  stderr: "piped",
}).output();
/** A test file or directory named on the command line (not an option or its value). */
function isPath(arg: string): boolean {
  if (arg.startsWith("-")) return false;
  try {
    Deno.statSync(arg);
    return true;
  } catch {
    return false;
  }
}

const run = await beginRun();

/**
 * Tests that hold the service to a time, `/health` within 250 ms beside a
 * hostile request: run after the rest, one file at a time, so that what
 * they measure is the service and not the other test files on the cores.
 */
const ALONE = "tests/alone/";

const ignored: string[] = [];
const decoder = new TextDecoder();
let partial = "";
const scan = (text: string) => {
  const lines = (partial + text).split("\n");
  partial = lines.pop()!;
  for (const line of lines) {
    // deno test prints `name ... ignored (0ms)`; colours stripped.
    // deno-lint-ignore no-control-regex
    const plain = line.replace(/\x1b\[[0-9;]*m/g, "");
    const match = /^(.*) \.\.\. ignored( \(\d+m?s\))?$/.exec(plain);
    if (match) ignored.push(match[1]);
  }
};

/** One `deno test` of these arguments, its output passed on: its exit code. */
async function denoTest(args: string[], jobs: string): Promise<number> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["test", "-A", "--no-check", "--v8-flags=--expose-gc", ...args],
    env: { DENO_JOBS: jobs, TMPDIR: run.tmpDir, [RUN_ID]: run.id },
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  // An interrupt ends deno test (the terminal sends it to both, and a
  // SIGTERM is passed on); this process then removes what the run made.
  const passOn = () => {
    interrupted = true;
    child.kill("SIGTERM");
  };
  Deno.addSignalListener("SIGTERM", passOn);
  try {
    for await (const chunk of child.stdout) {
      await Deno.stdout.write(chunk);
      scan(decoder.decode(chunk, { stream: true }));
    }
    scan("\n");
    return (await child.status).code;
  } finally {
    Deno.removeSignalListener("SIGTERM", passOn);
  }
}
let interrupted = false;
Deno.addSignalListener("SIGINT", () => interrupted = true);

// Paths given: those, together. None: the suite without tests/alone/ in
// parallel, then tests/alone/ with one file at a time.
const code = Deno.args.some(isPath)
  ? await denoTest(["--parallel", ...Deno.args], jobs)
  : await denoTest(
    ["--parallel", `--ignore=${ALONE}`, "tests/", ...Deno.args],
    jobs,
  );
const aloneCode = Deno.args.some(isPath) || interrupted
  ? 0
  : await denoTest([ALONE, ...Deno.args], "1");
await endRun(run, Deno.env.get("DATABASE_URL"));

/** The reason an ignored test's name ends with: its last "(...)" group. */
function reason(name: string): string | undefined {
  if (!name.endsWith(")")) return undefined;
  let depth = 0;
  for (let i = name.length - 1; i >= 0; i--) {
    if (name[i] === ")") depth++;
    else if (name[i] === "(" && --depth === 0) {
      return name.slice(i + 1, -1).replace(/^ignored: /, "");
    }
  }
  return undefined;
}

const byReason = new Map<string, number>();
const unexplained: string[] = [];
for (const name of ignored) {
  const why = reason(name);
  if (why === undefined) unexplained.push(name);
  else byReason.set(why, (byReason.get(why) ?? 0) + 1);
}
const reasons = [...byReason].sort((a, b) => b[1] - a[1]).map(([why, n]) =>
  HOW_TO_RUN[why] ? `${n} ${why} (${HOW_TO_RUN[why]})` : `${n} ${why}`
);
if (unexplained.length) reasons.push(`${unexplained.length} with no reason`);
console.log(
  ignored.length
    ? `skipped ${ignored.length}: ${reasons.join("; ")}`
    : "skipped 0",
);
if (unexplained.length) {
  console.error(
    `an ignored test must say why in its name, as "name (reason)": ${
      unexplained.join("; ")
    }`,
  );
}
const checked = await checking;
if (!checked.success) {
  await Deno.stderr.write(checked.stdout);
  await Deno.stderr.write(checked.stderr);
  console.error("deno check tests/ failed: the run fails with it");
}
Deno.exit(
  code || aloneCode || (unexplained.length || !checked.success ? 1 : 0),
);
