/** The service, or a CLI task, as a separate process, the way an operator runs it. */

const ROOT = new URL("../../", import.meta.url);

export interface ServiceProcess extends AsyncDisposable {
  baseUrl: string;
  /** Everything written to stderr so far. */
  stderr(): string;
  /** Sends a signal and answers the exit code. */
  stop(signal?: Deno.Signal): Promise<number>;
}

/** A free loopback port, as the OS hands it out. */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr;
  listener.close();
  return port;
}

/** Runs `deno run main.ts` and waits until it logs that it listens. */
export async function spawnService(
  env: Record<string, string>,
): Promise<ServiceProcess> {
  const port = freePort();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "main.ts"],
    cwd: ROOT,
    env: { HOST: "127.0.0.1", PORT: String(port), LOG_LEVEL: "info", ...env },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let err = "";
  const errDone = child.stderr.pipeThrough(new TextDecoderStream()).pipeTo(
    new WritableStream({ write: (chunk) => void (err += chunk) }),
  );
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  const deadline = Date.now() + 30_000;
  while (!out.includes('"msg":"listening"')) {
    if (Date.now() > deadline) {
      throw new Error(`no start within 30 s: ${out}${err}`);
    }
    const { value, done } = await lines.read();
    if (done) {
      await errDone;
      throw new Error(`exited before listening:\n${out}\n${err}`);
    }
    out += value;
  }
  // Keep draining stdout so the child never blocks on a full pipe.
  const outDone = (async () => {
    while (!(await lines.read()).done) { /* drain */ }
  })();
  let status: Promise<Deno.CommandStatus> | undefined;
  const stop = async (signal: Deno.Signal = "SIGTERM") => {
    if (!status) {
      child.kill(signal);
      status = child.status;
    }
    const { code } = await status;
    await Promise.all([outDone, errDone]);
    return code;
  };
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    stderr: () => err,
    stop,
    [Symbol.asyncDispose]: async () => void await stop(),
  };
}

/** Runs a deno task script to completion. */
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
