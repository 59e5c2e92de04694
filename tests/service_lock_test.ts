/**
 * `deno task start` fetches only what the service imports: it runs with
 * service.lock, the lock of main.ts's and the operators' tasks' own module
 * graphs, instead of deno.lock, which also pins the tests' and tools'
 * packages (Deno fetches every package of the lock it runs with), and the
 * tasks of the tests and tools install deno.lock's packages themselves.
 */
import { assert, assertEquals } from "./support/assert.ts";

const ROOT = new URL("../", import.meta.url);
const lock = async (name: string) =>
  JSON.parse(await Deno.readTextFile(new URL(name, ROOT)));

Deno.test("deno task start and the operators' tasks run with service.lock, which pins no test-only package", async () => {
  const deno = await lock("deno.json");
  // "auto" makes `deno task` install every package of deno.lock before any
  // task, the start's included.
  assertEquals(deno.nodeModulesDir, "manual");
  for (
    const task of [
      "start",
      "create-admin",
      "import",
      "audit:verify",
      "rotate-device-key",
      "backup:embedded",
    ]
  ) {
    assert(
      deno.tasks[task].includes(
        "--lock=service.lock --frozen --node-modules-dir=none",
      ),
      `${task} runs with service.lock`,
    );
  }
  for (const [task, command] of Object.entries<string>(deno.tasks)) {
    if (
      /deno (run|test|check)/.test(command) && !command.includes("service.lock")
    ) {
      assert(
        command.startsWith("deno install --frozen --quiet && "),
        `${task} installs deno.lock's packages first: without node_modules it cannot start`,
      );
    }
  }
  const service = await lock("service.lock");
  const names = Object.keys(service.npm).map((k) => k.replace(/@[^@]*$/, ""));
  for (
    const testOnly of [
      "playwright-core",
      "typescript",
      "fast-check",
      "openapi-typescript",
    ]
  ) {
    assert(!names.includes(testOnly), `service.lock pins ${testOnly}`);
  }
});

Deno.test("service.lock resolves every package as deno.lock does, for the same deno.json (else: deno task lock:service)", async () => {
  const [service, full] = [await lock("service.lock"), await lock("deno.lock")];
  assertEquals(service.workspace, full.workspace);
  for (const [key, entry] of Object.entries(service.npm)) {
    assertEquals(entry, full.npm[key], key);
  }
  for (const [key, value] of Object.entries(service.specifiers)) {
    assertEquals(value, full.specifiers[key], key);
  }
});
