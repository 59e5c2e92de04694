/**
 * clients/examples/consumer.ts, the example clients/README.md shows, run as
 * a consumer runs it: its own process, only network and environment
 * permissions, against a live service.
 */
import { assert, assertEquals, assertMatch } from "./support/assert.ts";
import { ADMIN, sharedService, type TestService } from "./support/service.ts";

// bcrypt's work is not this file's subject: its cheapest cost.
const service = sharedService({}, { bcryptCost: 4 });

const ROOT = new URL("../", import.meta.url);
const EXAMPLE = "clients/examples/consumer.ts";

async function runExample(
  svc: TestService,
  args: string[],
  password = ADMIN.password,
) {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-net=127.0.0.1", "--allow-env", EXAMPLE, ...args],
    cwd: ROOT,
    env: {
      USER_ADMIN_URL: svc.baseUrl,
      USER_ADMIN_USERNAME: ADMIN.username,
      USER_ADMIN_PASSWORD: password,
    },
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b).trim();
  return { code, stdout: text(stdout), stderr: text(stderr) };
}

Deno.test("the consumer example creates an account, then changes its role, then leaves it alone", async () => {
  const svc = await service();
  const runs = [];
  for (const role of ["viewer", "admin", "admin"]) {
    runs.push(await runExample(svc, ["carol", "carol@example.com", role]));
  }
  assertEquals(runs.map((r) => [r.code, r.stdout]), [
    [0, '{"carol":"created"}'],
    [0, '{"carol":"role changed"}'],
    [0, '{"carol":"unchanged"}'],
  ], runs.map((r) => r.stderr).join("\n"));
  const users = await svc.admin.get("/api/users");
  assertEquals(
    users.ok && users.data.map((u) => [u.username, u.role]),
    [["admin", "admin"], ["carol", "admin"]],
  );
});

Deno.test("the consumer example stops with the contract's message when it cannot log in or the e-mail is taken", async () => {
  const svc = await service();
  const taken = await runExample(svc, ["dave", `${ADMIN.username}@localhost`]);
  assertEquals(taken.code, 1);
  assertMatch(taken.stderr, /admin@localhost belongs to another account/);
  const refused = await runExample(
    svc,
    ["erin", "erin@example.com"],
    "wrong password",
  );
  assertEquals(refused.code, 1);
  assertMatch(refused.stderr, /login: 401 Invalid username or password/);
});

Deno.test("clients/README.md shows the consumer example exactly as the file CI runs", async () => {
  const example = await Deno.readTextFile(new URL(EXAMPLE, ROOT));
  const readme = await Deno.readTextFile(new URL("clients/README.md", ROOT));
  assert(
    readme.includes("```ts\n" + example + "```\n"),
    `clients/README.md's copy of ${EXAMPLE} differs from the file: paste it again`,
  );
});
