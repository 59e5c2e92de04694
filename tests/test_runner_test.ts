/**
 * `deno task test`'s summary: what it skipped, why, and how to run it.
 */
import { assert, assertEquals } from "./support/assert.ts";
import { embeddedOnly } from "./support/conditions.ts";

Deno.test(
  embeddedOnly(
    "on the embedded database the summary says how to run the tests that need PostgreSQL",
  ),
  async () => {
    const env = Deno.env.toObject();
    delete env.DATABASE_URL;
    const run = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        "tools/test.ts",
        "tests/support/fixtures/skipped_on_embedded.ts",
      ],
      env: { ...env, NO_COLOR: "1" },
      clearEnv: true,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const out = new TextDecoder().decode(run.stdout);
    assertEquals(run.code, 0, out);
    assert(
      out.includes(
        "skipped 1: 1 PostgreSQL only: DATABASE_URL is unset (run them with DATABASE_URL=postgres://USER@HOST:5432/DATABASE deno task test)",
      ),
      out,
    );
  },
);
