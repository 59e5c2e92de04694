/**
 * `deno task start` fetches only what the service imports: it runs with
 * service.lock, the lock of main.ts's own module graph, instead of
 * deno.lock, which also pins the tests' and tools' packages (Deno fetches
 * every package of the lock it runs with).
 */
import { assert, assertEquals } from "./support/assert.ts";

const ROOT = new URL("../", import.meta.url);
const lock = async (name: string) =>
  JSON.parse(await Deno.readTextFile(new URL(name, ROOT)));

Deno.test("deno task start runs with service.lock, which pins no test-only package", async () => {
  const deno = await lock("deno.json");
  assert(deno.tasks.start.includes("--lock=service.lock --frozen"));
  const service = await lock("service.lock");
  const names = Object.keys(service.npm).map((k) => k.replace(/@[^@]*$/, ""));
  for (
    const testOnly of [
      "playwright-core",
      "typescript",
      "fast-check",
      "openapi-typescript",
      "openapi-fetch",
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
