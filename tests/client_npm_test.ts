/**
 * The client as a package, for both registries. JSR: `deno publish
 * --dry-run` in clients/ passes (license, exports, no slow types). npm:
 * `deno task client:npm` builds and packs the package, npm installs the
 * tarball into a fresh Node project outside the repository, the TypeScript
 * compiler checks a typed consumer against the installed declarations, and
 * Node runs a plain JavaScript consumer against a live service.
 *
 * Neither depends on the database: they run on the PostgreSQL pass only, so
 * a CI run (which runs the suite once per database) builds them once.
 */
import ts from "typescript";
import { assert, assertEquals } from "./support/assert.ts";
import { postgresOnly, withTool } from "./support/conditions.ts";
import {
  diagnosticMessages,
  NODE_AND_NPM,
  NODE_PROJECT,
} from "./support/node.ts";
import { ADMIN, startService } from "./support/service.ts";

const ROOT = new URL("../", import.meta.url).pathname;

const text = (b: Uint8Array) => new TextDecoder().decode(b).trim();

async function run(
  cmd: string,
  args: string[],
  options: { cwd: string; env?: Record<string, string> },
): Promise<string> {
  const out = await new Deno.Command(cmd, { args, ...options }).output();
  assertEquals(
    out.code,
    0,
    `${cmd} ${args.join(" ")}:\n${text(out.stdout)}\n${text(out.stderr)}`,
  );
  return text(out.stdout);
}

/** tsc's verdict on a typed consumer, as a Node project would compile it. */
function typeCheck(file: string): string[] {
  const program = ts.createProgram([file], { ...NODE_PROJECT, noEmit: true });
  return diagnosticMessages(ts.getPreEmitDiagnostics(program));
}

const TYPED_CONSUMER = `
import { createUserAdminClient, createUserWithRetry, type Role, type User } from "@user-admin/client";

const api = createUserAdminClient({ baseUrl: "http://127.0.0.1:1" });
const created = await api.post("/api/users", {
  body: { username: "a", name: "A", email: "a@example.com", password: "correct horse", role: "viewer" },
});
if (created.ok) {
  const user: User = created.data;
  console.log(user.createdAt);
} else if (created.status === 409) {
  const message:
    | "Username or email already exists"
    | "Request with this Idempotency-Key is in progress" = created.error;
  console.log(message);
}
const service = createUserAdminClient({ baseUrl: "http://127.0.0.1:1", apiKey: "uak_x" });
const retried = await createUserWithRetry(service, {
  username: "b", name: "B", email: "b@example.com", password: "correct horse", role: "admin",
}, { attempts: 3 });
if (retried.ok) console.log(retried.data.id);
const role: Role = "admin";
// @ts-expect-error: a role the service does not have
const wrong: Role = "root";
// @ts-expect-error: a path the service does not have
await api.get("/api/nowhere");
console.log(role, wrong);
`;

const JS_CONSUMER = `
import { createUserAdminClient, createUserWithRetry } from "@user-admin/client";

const { USER_ADMIN_URL, USER_ADMIN_USERNAME, USER_ADMIN_PASSWORD } = process.env;
const api = createUserAdminClient({ baseUrl: USER_ADMIN_URL });
const steps = {};

const login = await api.login(USER_ADMIN_USERNAME, USER_ADMIN_PASSWORD);
steps.login = [login.status, login.ok && login.data.role, api.hasSession];

const grace = {
  username: "grace",
  name: "Grace",
  email: "grace@example.com",
  password: "correct horse",
  role: "viewer",
};
const created = await api.post("/api/users", { body: grace });
steps.create = [created.status, created.ok && created.data.username];

const again = await api.post("/api/users", {
  body: { ...grace, username: "GRACE", email: "someone.else@example.com" },
});
steps.duplicate = [again.status, again.error];

const key = await api.post("/api/users/{id}/keys", {
  params: { path: { id: login.data.id } },
  body: { name: "node consumer" },
});
// A service's client: the key, no login.
const service = createUserAdminClient({ baseUrl: USER_ADMIN_URL, apiKey: key.data.key });
const me = await service.me();
steps.keyMe = [me.status, me.ok && me.data.username, service.hasSession];
const hopper = await createUserWithRetry(service, {
  ...grace,
  username: "hopper",
  email: "hopper@example.com",
});
steps.keyCreate = [hopper.status, hopper.ok && hopper.data.username];

const list = await api.get("/api/users");
steps.list = [list.status, list.ok && list.data.map((u) => u.username)];

const logout = await api.logout();
steps.logout = [logout.status, api.hasSession];

const after = await api.get("/api/users");
steps.afterLogout = [after.status, after.error];
const keyAfter = await service.get("/api/users");
steps.keyAfterLogout = [keyAfter.status];

console.log(JSON.stringify(steps));
`;

// Neither depends on the database: once per CI run, on the PostgreSQL pass.
Deno.test({
  ...postgresOnly("clients/ passes deno publish --dry-run"),
  async fn() {
    await run("deno", ["publish", "--dry-run", "--allow-dirty"], {
      cwd: `${ROOT}clients`,
    });
  },
});

Deno.test(withTool(
  "the npm package installs into a Node project and works from plain JavaScript",
  NODE_AND_NPM,
  async () => {
    const build = await run("deno", ["task", "client:npm"], { cwd: ROOT });
    const tarball = build.split("\n").at(-1)!;
    assert(tarball.startsWith("/") && tarball.endsWith(".tgz"), build);

    await using svc = await startService();
    // A temporary directory: outside the repository, so nothing of it
    // (node_modules, deno.json, the workspace) can help the package.
    const project = await Deno.makeTempDir({ prefix: "user-admin-npm-" });
    try {
      assert(!project.startsWith(ROOT), project);
      await Deno.writeTextFile(
        `${project}/package.json`,
        JSON.stringify({ name: "consumer", private: true, type: "module" }),
      );
      await run("npm", ["install", "--no-audit", "--no-fund", tarball], {
        cwd: project,
      });
      const manifest = JSON.parse(
        await Deno.readTextFile(`${project}/package.json`),
      );
      assertEquals(Object.keys(manifest.dependencies), ["@user-admin/client"]);

      await Deno.writeTextFile(`${project}/typed.ts`, TYPED_CONSUMER);
      assertEquals(typeCheck(`${project}/typed.ts`), []);

      await Deno.writeTextFile(`${project}/consumer.mjs`, JS_CONSUMER);
      const output = await run("node", ["consumer.mjs"], {
        cwd: project,
        env: {
          USER_ADMIN_URL: svc.baseUrl,
          USER_ADMIN_USERNAME: ADMIN.username,
          USER_ADMIN_PASSWORD: ADMIN.password,
        },
      });
      assertEquals(JSON.parse(output), {
        login: [200, "admin", true],
        create: [201, "grace"],
        duplicate: [409, "Username or email already exists"],
        keyMe: [200, ADMIN.username, false],
        keyCreate: [201, "hopper"],
        list: [200, [ADMIN.username, "grace", "hopper"]],
        logout: [200, false],
        afterLogout: [401, "Unauthorised"],
        keyAfterLogout: [200],
      });
    } finally {
      await Deno.remove(project, { recursive: true });
    }
  },
));
