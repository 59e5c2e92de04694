/**
 * The service as a real process (`deno run main.ts`), as it runs in
 * production: for the scale-out tests and the bench.
 */
const ROOT = new URL("../../", import.meta.url);

export interface Instance extends AsyncDisposable {
  baseUrl: string;
  pid: number;
  /** Milliseconds from spawning `deno run` to its first HTTP answer. */
  readyMs: number;
}

/** A port free right now on loopback. */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr;
  listener.close();
  return port;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Spawns a Deno script on a free port (its PORT) and waits until it answers
 * HTTP on `/health`, any status. Disposing sends SIGTERM and waits for exit.
 */
export async function spawnServer(
  args: string[],
  env: Record<string, string>,
  timeoutMs = 60_000,
): Promise<Instance> {
  const port = freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const started = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args,
    env: { ...env, PORT: String(port) },
    cwd: ROOT.pathname,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  // Read all along, so the child never blocks on a full pipe.
  const stderr = new Response(child.stderr).text();
  let exited = false;
  const status = child.status.finally(() => exited = true);
  const stop = async () => {
    if (!exited) child.kill("SIGTERM");
    await status;
    return await stderr;
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
        async [Symbol.asyncDispose]() {
          await stop();
        },
      };
    } catch {
      await sleep(20);
    }
  }
  throw new Error(`${args.join(" ")} did not start:\n${await stop()}`);
}

/** main.ts on loopback with these settings added to the environment. */
export const startInstance = (env: Record<string, string>) =>
  spawnServer(["run", "-A", "main.ts"], {
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    ...env,
  });

/** Starts several at once; if any fails, stops the others before throwing. */
export async function startInstances(
  envs: Record<string, string>[],
): Promise<Instance[] & AsyncDisposable> {
  const settled = await Promise.allSettled(envs.map(startInstance));
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
