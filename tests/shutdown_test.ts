/**
 * The real entry point, `main.ts`, as a subprocess: SIGTERM while requests
 * are in flight lets them finish, closes the database and exits 0; the data
 * is all there when the service starts again on the same database.
 */
import { assert, assertEquals } from "./support/assert.ts";
import { ADMIN, testDatabase } from "./support/service.ts";

const MAIN = new URL("../main.ts", import.meta.url).pathname;

function freePort() {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr;
  listener.close();
  return port;
}

interface Running {
  baseUrl: string;
  child: Deno.ChildProcess;
  /** stdout lines so far, parsed where they are JSON. */
  lines: Record<string, unknown>[];
  /** Resolves when the process has exited and its output is read. */
  exited: Promise<Deno.CommandStatus>;
}

async function startMain(env: Record<string, string>): Promise<Running> {
  const port = freePort();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN],
    env: {
      ...env,
      HOST: "127.0.0.1",
      PORT: String(port),
      ADMIN_USERNAME: ADMIN.username,
      ADMIN_PASSWORD: ADMIN.password,
      LOG_LEVEL: "info",
      // Slow hashing keeps the creations in flight when the signal comes.
      BCRYPT_COST: "14",
      REQUEST_TIMEOUT_MS: "30000",
    },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines: Record<string, unknown>[] = [];
  let listening!: () => void;
  const ready = new Promise<void>((r) => listening = r);
  const reading = (async () => {
    const decoder = new TextDecoderStream();
    let buffer = "";
    for await (const text of child.stdout.pipeThrough(decoder)) {
      buffer += text;
      let nl;
      while ((nl = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        try {
          const parsed = JSON.parse(line);
          lines.push(parsed);
          if (parsed.msg === "listening") listening();
        } catch {
          lines.push({ raw: line });
        }
      }
    }
  })();
  const stderr = new Response(child.stderr).text();
  const exited = (async () => {
    const status = await child.status;
    await reading;
    const err = await stderr;
    if (!status.success) console.error(err);
    return status;
  })();
  // Fail, rather than hang, if it never comes up.
  let timer: ReturnType<typeof setTimeout> | undefined;
  const tooLong = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error("main.ts did not start")),
      60_000,
    );
  });
  try {
    await Promise.race([
      ready,
      exited.then(() => {
        throw new Error("main.ts exited before listening");
      }),
      tooLong,
    ]);
  } catch (e) {
    try {
      child.kill("SIGKILL");
    } catch { /* gone */ }
    await exited;
    throw e;
  } finally {
    clearTimeout(timer);
  }
  return { baseUrl: `http://127.0.0.1:${port}`, child, lines, exited };
}

/** Waits for the exit, killing the process if it does not come in time. */
async function exitOf(running: Running, withinMs = 30_000) {
  const timer = setTimeout(() => {
    try {
      running.child.kill("SIGKILL");
    } catch { /* gone */ }
  }, withinMs);
  try {
    return await running.exited;
  } finally {
    clearTimeout(timer);
  }
}

async function login(baseUrl: string) {
  const res = await fetch(`${baseUrl}/api/auth/login`, {
    method: "POST",
    body: JSON.stringify(ADMIN),
  });
  await res.body?.cancel();
  assertEquals(res.status, 200);
  return res.headers.get("set-cookie")!.split(";")[0];
}

Deno.test("SIGTERM lets in-flight requests finish, closes the database, exits 0, and every row is there after a restart", async () => {
  await using db = await testDatabase();
  const first = await startMain(db.env);
  let created: string[];
  try {
    const cookie = await login(first.baseUrl);
    const names = ["inflight1", "inflight2", "inflight3", "inflight4"];
    const requests = names.map((name) =>
      fetch(`${first.baseUrl}/api/users`, {
        method: "POST",
        headers: { cookie },
        body: JSON.stringify({
          username: name,
          name,
          email: `${name}@example.com`,
          password: "inflight-password",
          role: "viewer",
        }),
      })
    );
    // The requests are on the wire; each needs a slow bcrypt hash first.
    await new Promise((r) => setTimeout(r, 400));
    first.child.kill("SIGTERM");
    const answers = await Promise.all(requests);
    const bodies = await Promise.all(answers.map((r) => r.json()));
    assertEquals(answers.map((r) => r.status), [201, 201, 201, 201]);
    created = bodies.map((b) => b.username);
    assertEquals(created, names);
  } finally {
    const status = await exitOf(first);
    assertEquals(status.code, 0);
  }
  const messages = first.lines.map((l) => l.msg);
  const shuttingDown = messages.indexOf("shutting down");
  assert(shuttingDown >= 0, "the signal was handled");
  // The creations were answered after the signal, before the pool closed.
  const finishedAfter = first.lines.slice(shuttingDown).filter((l) =>
    l.msg === "request" && l.status === 201
  );
  assertEquals(finishedAfter.length, 4, "the requests were in flight");
  assertEquals(messages.at(-1), "stopped");
  // Nothing listens any more.
  const refused = await fetch(`${first.baseUrl}/health`).then(
    () => false,
    () => true,
  );
  assert(refused, "the port still answers after exit");

  // The same database, a new process: every row came through.
  const second = await startMain(db.env);
  try {
    const cookie = await login(second.baseUrl);
    const res = await fetch(`${second.baseUrl}/api/users`, {
      headers: { cookie },
    });
    const users: { username: string }[] = await res.json();
    assertEquals(
      users.map((u) => u.username).sort(),
      [ADMIN.username, ...created].sort(),
    );
  } finally {
    second.child.kill("SIGTERM");
    assertEquals((await exitOf(second)).code, 0);
  }
});

Deno.test("a second SIGTERM during shutdown changes nothing, and an idle service exits 0 at once", async () => {
  await using db = await testDatabase();
  const running = await startMain(db.env);
  running.child.kill("SIGTERM");
  running.child.kill("SIGTERM");
  const status = await exitOf(running, 15_000);
  assertEquals(status.code, 0);
  const messages = running.lines.map((l) => l.msg);
  assertEquals(messages.filter((m) => m === "shutting down").length, 1);
  assertEquals(messages.at(-1), "stopped");
});
