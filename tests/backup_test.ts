/**
 * `deno task backup:embedded OUT` backs up the embedded database while the
 * service runs on it, and the restore docs/operations.md gives (unpack into
 * an empty directory, start on it) brings the users back.
 */
import { assert, assertEquals } from "./support/assert.ts";
import { embeddedOnly } from "./support/conditions.ts";
import { startService } from "./support/service.ts";
import { relativeTarEntries } from "../src/db/tar-entries.ts";

const ROOT = new URL("../", import.meta.url);

async function run(command: string, args: string[], env = {}) {
  const out = await new Deno.Command(command, {
    args,
    cwd: ROOT,
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
}

Deno.test({
  ...embeddedOnly(
    "a backup of the running embedded service, unpacked into a fresh DATA_DIR, starts and logs in the users it held",
  ),
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "user-admin-backup-" });
    try {
      const backup = `${dir}/users.tar`;
      let password: string, laterPassword: string;
      {
        await using svc = await startService();
        const before = await svc.userClient("viewer", { username: "kept" });
        password = before.password;
        const taken = await run(Deno.execPath(), [
          "task",
          "--quiet",
          "backup:embedded",
          backup,
        ], { DATA_DIR: svc.config.DATA_DIR });
        assertEquals(taken.code, 0, taken.stderr);
        // Still serving: the backup neither stopped nor locked it.
        laterPassword =
          (await svc.userClient("viewer", { username: "after" })).password;
      }

      const restored = `${dir}/restored`;
      await Deno.mkdir(restored);
      const listed = await run("tar", ["-tf", backup]);
      assertEquals(listed.code, 0, listed.stderr);
      const names = listed.stdout.split("\n").filter((n) => n !== "");
      assert(names.includes("PG_VERSION"), names.slice(0, 5).join(", "));
      assertEquals(
        names.filter((n) => n.startsWith("/")),
        [],
        "every entry is named relative to the data directory",
      );
      const unpacked = await run("tar", ["-xf", backup, "-C", restored]);
      assertEquals(unpacked.code, 0, unpacked.stderr);
      assertEquals(unpacked.stderr, "", "tar unpacks without a warning");

      await using svc = await startService({ DATA_DIR: restored });
      const login = await svc.client().login("kept", password);
      assert(login.ok, login.ok ? "" : login.error);
      const after = await svc.client().login("after", laterPassword);
      assertEquals(after.ok ? "" : after.error, "Invalid username or password");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("backup:embedded without a running service says so and writes nothing", async () => {
  const dir = await Deno.makeTempDir({ prefix: "user-admin-backup-" });
  try {
    const taken = await run(Deno.execPath(), [
      "task",
      "--quiet",
      "backup:embedded",
      `${dir}/out.tar`,
    ], { DATA_DIR: `${dir}/data`, DATABASE_URL: "" });
    assertEquals(taken.code, 2, taken.stderr);
    assert(taken.stderr.includes("No service answers"), taken.stderr);
    assertEquals([...Deno.readDirSync(dir)], []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an archive of absolute names, long ones in the ustar prefix included, comes out relative and byte for byte the same content", async () => {
  const dir = await Deno.makeTempDir({ prefix: "user-admin-tar-" });
  try {
    const deep = `${dir}/src/${"d".repeat(30)}/${"e".repeat(20)}`;
    await Deno.mkdir(deep, { recursive: true });
    const content = new Uint8Array(1500).map((_, i) => i % 251);
    await Deno.writeFile(`${deep}/file`, content);
    await Deno.writeTextFile(`${dir}/src/small`, "kept");
    const made = await run("tar", [
      "--format=ustar",
      "-cPf",
      `${dir}/absolute.tar`,
      `${dir}/src`,
    ]);
    assertEquals(made.code, 0, made.stderr);
    const absolute = await Deno.open(`${dir}/absolute.tar`);
    const relative = await Deno.open(`${dir}/relative.tar`, {
      write: true,
      create: true,
    });
    // Chunks of odd sizes: headers and contents split across them.
    let rest = new Uint8Array(await new Response(absolute.readable).bytes());
    const odd = new ReadableStream<Uint8Array>({
      pull(c) {
        if (rest.length === 0) return c.close();
        c.enqueue(rest.slice(0, 333));
        rest = rest.slice(333);
      },
    });
    await odd.pipeThrough(relativeTarEntries()).pipeTo(relative.writable);
    const names = (await run("tar", ["-tf", `${dir}/relative.tar`])).stdout
      .split("\n").filter((n) => n !== "");
    assertEquals(names.filter((n) => n.startsWith("/")), []);
    assert(names.includes(`${deep.slice(1)}/file`), names.join(", "));
    await Deno.mkdir(`${dir}/out`);
    const unpacked = await run("tar", [
      "-xf",
      `${dir}/relative.tar`,
      "-C",
      `${dir}/out`,
    ]);
    assertEquals(unpacked.stderr, "");
    assertEquals(await Deno.readFile(`${dir}/out${deep}/file`), content);
    assertEquals(await Deno.readTextFile(`${dir}/out${dir}/src/small`), "kept");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
