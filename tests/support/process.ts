/**
 * The service (or the bench's floor, or a CLI task) as a separate process,
 * the way an operator runs it: for the startup, shutdown and scale-out tests
 * and the bench. A CLI task's main also runs in the test's own isolate.
 */
import type { TaskMain } from "../../src/cli/task.ts";

const ROOT = new URL("../../", import.meta.url);

export interface Instance extends AsyncDisposable {
  baseUrl: string;
  pid: number;
  /** Milliseconds from spawning to its first HTTP answer. */
  readyMs: number;
  /** stdout lines so far, parsed where they are JSON. */
  lines: Record<string, unknown>[];
  /** Everything written to stderr so far. */
  stderr(): string;
  /** Sends a signal and returns at once. */
  kill(signal?: Deno.Signal): void;
  /** Waits for the exit (and its output), with SIGKILL after `withinMs`. */
  exit(withinMs?: number): Promise<Deno.CommandStatus>;
  /** Sends a signal, then waits for the exit: the exit code. */
  stop(signal?: Deno.Signal): Promise<number>;
}

/** A port free right now on loopback. */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr;
  listener.close();
  return port;
}

/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number) =>
  new Promise<void>((r) => setTimeout(r, ms));

/**
 * Spawns `deno <args>` in `cwd` (this checkout by default; another release's
 * files for the upgrade test) with PORT set to a free port and waits until
 * it answers HTTP on `/health`, any status. Disposing stops it with SIGTERM.
 * `keepLines: false` reads stdout without keeping it (`lines` stays empty):
 * for a bench whose service logs every request.
 */
export async function spawnServer(
  args: string[],
  env: Record<string, string>,
  timeoutMs = 60_000,
  cwd: string | URL = ROOT,
  { keepLines = true } = {},
): Promise<Instance> {
  const port = freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const started = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args,
    env: { ...env, PORT: String(port) },
    cwd,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  // Both pipes are read all along, so the child never blocks on a full pipe.
  const lines: Record<string, unknown>[] = [];
  const reading = keepLines
    ? readLines(child.stdout, (line) => {
      try {
        lines.push(JSON.parse(line));
      } catch {
        lines.push({ raw: line });
      }
    })
    : child.stdout.pipeTo(new WritableStream());
  let err = "";
  const readingErr = child.stderr.pipeThrough(new TextDecoderStream())
    .pipeTo(new WritableStream({ write: (chunk) => void (err += chunk) }));
  let exited = false;
  const status = child.status.then(async (s) => {
    exited = true;
    await Promise.all([reading, readingErr]);
    return s;
  });

  const kill = (signal: Deno.Signal = "SIGTERM") => {
    if (!exited) child.kill(signal);
  };
  const exit = async (withinMs = 30_000) => {
    const timer = setTimeout(() => kill("SIGKILL"), withinMs);
    try {
      return await status;
    } finally {
      clearTimeout(timer);
    }
  };
  const stop = async (signal: Deno.Signal = "SIGTERM") => {
    kill(signal);
    return (await exit()).code;
  };

  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && !exited) {
    try {
      const res = await fetch(`${baseUrl}/health`);
      await res.body?.cancel();
      return {
        baseUrl,
        pid: child.pid,
        readyMs: performance.now() - started,
        lines,
        stderr: () => err,
        kill,
        exit,
        stop,
        [Symbol.asyncDispose]: async () => void await stop(),
      };
    } catch {
      await sleep(20);
    }
  }
  kill("SIGKILL");
  await status;
  throw new Error(`deno ${args.join(" ")} did not start:\n${err}`);
}

async function readLines(
  stream: ReadableStream<Uint8Array>,
  onLine: (line: string) => void,
) {
  let buffer = "";
  for await (const text of stream.pipeThrough(new TextDecoderStream())) {
    buffer += text;
    let nl;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      onLine(buffer.slice(0, nl));
      buffer = buffer.slice(nl + 1);
    }
  }
  if (buffer) onLine(buffer);
}

/**
 * main.ts on loopback with these settings added to the environment, and
 * `denoFlags` (e.g. `--v8-flags=...`) given to `deno run`.
 */
export const spawnService = (
  env: Record<string, string>,
  denoFlags: string[] = [],
) =>
  spawnServer(["run", "-A", ...denoFlags, "main.ts"], {
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    ...env,
  });

/** Starts several at once; if any fails, stops the others before throwing. */
export async function startInstances(
  envs: Record<string, string>[],
): Promise<Instance[] & AsyncDisposable> {
  const settled = await Promise.allSettled(
    envs.map((env) => spawnService(env)),
  );
  const started = settled.flatMap((s) =>
    s.status === "fulfilled" ? [s.value] : []
  );
  const disposeAll = async () => {
    await Promise.all(started.map((i) => i[Symbol.asyncDispose]()));
  };
  const failed = settled.find((s) => s.status === "rejected");
  if (failed) {
    await disposeAll();
    throw failed.reason;
  }
  return Object.assign(started, { [Symbol.asyncDispose]: disposeAll });
}

/** Runs a Deno script to completion. */
export async function runScript(
  script: string,
  args: string[],
  env: Record<string, string>,
) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", script, ...args],
    cwd: ROOT,
    env,
  }).output();
  const text = new TextDecoder();
  return {
    code: out.code,
    stdout: text.decode(out.stdout),
    stderr: text.decode(out.stderr),
  };
}

/**
 * Runs a CLI task's main in this isolate, with the environment a process
 * would get (this one's, `env` over it), and answers as runScript does:
 * for the tests of what a task does, where a process of its own (a Deno
 * started and its modules loaded) adds nothing but its start. Each
 * task is also run as a process where that is the point (exit codes,
 * startup_test).
 */
export async function runTask(
  main: TaskMain,
  args: string[],
  env: Record<string, string>,
) {
  let stdout = "";
  let stderr = "";
  const code = await main(args, { ...Deno.env.toObject(), ...env }, {
    log: (line) => void (stdout += line + "\n"),
    error: (line) => void (stderr += line + "\n"),
  });
  return { code, stdout, stderr };
}

/**
 * Runs a command to completion in `cwd` and answers its output, trimmed;
 * a non-zero exit fails the test with the command and both outputs.
 */
export async function runChecked(
  command: string,
  args: string[],
  cwd: string,
): Promise<string> {
  const out = await new Deno.Command(command, {
    args,
    cwd,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b).trim();
  if (out.code !== 0) {
    throw new Error(
      `${command} ${args.join(" ")} exited ${out.code}\n${text(out.stdout)}\n${
        text(out.stderr)
      }`,
    );
  }
  return text(out.stdout);
}
