/**
 * `deno task backup:embedded OUT` backs up the embedded database while the
 * service runs on it, and the restore docs/operations.md gives (unpack into
 * an empty directory, start on it) brings the users back.
 */
import { assert, assertEquals } from "./support/assert.ts";
import { embeddedOnly } from "./support/conditions.ts";
import { startService } from "./support/service.ts";

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
      const unpacked = await run("tar", ["-xf", backup, "-C", restored]);
      assertEquals(unpacked.code, 0, unpacked.stderr);

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
