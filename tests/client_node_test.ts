/**
 * The client outside Deno: the TypeScript compiler checks clients/mod.ts and
 * the consumer example as a Node project would (module NodeNext, only the
 * standard and DOM libraries, no Deno types) and emits JavaScript, which
 * Node runs against a live service.
 */
import ts from "typescript";
import { assertEquals } from "./support/assert.ts";
import { withTool } from "./support/conditions.ts";
import { diagnosticMessages, NODE, NODE_PROJECT } from "./support/node.ts";
import { ADMIN, startService } from "./support/service.ts";

const CLIENTS = new URL("../clients/", import.meta.url).pathname;
const OPENAPI_FETCH = new URL("../node_modules/openapi-fetch", import.meta.url)
  .pathname;

/**
 * A Node project holding the client: its sources, a package.json naming it
 * @user-admin/client, and openapi-fetch in node_modules.
 */
async function nodeProject(dir: string) {
  await Deno.mkdir(`${dir}/examples`);
  for (const file of ["schema.d.ts", "examples/consumer.ts"]) {
    await Deno.copyFile(`${CLIENTS}${file}`, `${dir}/${file}`);
  }
  // mod.ts names npm:openapi-fetch@<version> for Deno; Node resolves the bare
  // name (as the npm build does too).
  const mod = await Deno.readTextFile(`${CLIENTS}mod.ts`);
  await Deno.writeTextFile(
    `${dir}/mod.ts`,
    mod.replace(/"npm:openapi-fetch@[^"]+"/, '"openapi-fetch"'),
  );
  await Deno.writeTextFile(
    `${dir}/package.json`,
    JSON.stringify({
      name: "@user-admin/client",
      type: "module",
      exports: { ".": "./mod.js" },
    }),
  );
  await Deno.mkdir(`${dir}/node_modules`);
  await Deno.symlink(
    await Deno.realPath(OPENAPI_FETCH),
    `${dir}/node_modules/openapi-fetch`,
  );
}

/** tsc's check and emit (JavaScript beside each source); answers the diagnostics. */
function compile(dir: string): string[] {
  const options: ts.CompilerOptions = {
    ...NODE_PROJECT,
    skipLibCheck: true,
    // Deno-style imports of ./x.ts become ./x.js in the output.
    allowImportingTsExtensions: true,
    rewriteRelativeImportExtensions: true,
  };
  const program = ts.createProgram([`${dir}/examples/consumer.ts`], options);
  const emitted = program.emit();
  return diagnosticMessages([
    ...ts.getPreEmitDiagnostics(program),
    ...emitted.diagnostics,
  ]);
}

Deno.test(withTool(
  "the client and the consumer example type-check as plain TypeScript and run on Node",
  NODE,
  async () => {
    await using svc = await startService();
    const out = await Deno.makeTempDir({ prefix: "user-admin-node-client-" });
    try {
      await nodeProject(out);
      const diagnostics = compile(out);
      // `import.meta.main` and `Deno` appear only in the example's Deno entry
      // point, which Node never reaches; everything else must be clean.
      const denoOnly =
        /^(Property 'main' does not exist on type 'ImportMeta'|Cannot find name 'Deno')\.$/;
      assertEquals(diagnostics.filter((d) => !denoOnly.test(d)), []);
      await Deno.writeTextFile(
        `${out}/run.mjs`,
        `import { onboard } from "./examples/consumer.js";
const { URL: baseUrl, USERNAME: username, PASSWORD: password } = process.env;
const done = await onboard({ baseUrl, username, password }, [
  { username: "frank", name: "Frank", email: "frank@example.com", role: "viewer", initialPassword: "correct horse" },
]);
console.log(JSON.stringify(done));
`,
      );
      const run = await new Deno.Command("node", {
        args: [`${out}/run.mjs`],
        env: {
          URL: svc.baseUrl,
          USERNAME: ADMIN.username,
          PASSWORD: ADMIN.password,
        },
      }).output();
      const text = (b: Uint8Array) => new TextDecoder().decode(b).trim();
      assertEquals(
        [run.code, text(run.stdout)],
        [0, '{"frank":"created"}'],
        text(run.stderr),
      );
      const frank = await svc.client().login("frank", "correct horse");
      assertEquals(frank.ok && frank.data.role, "viewer");
    } finally {
      await Deno.remove(out, { recursive: true });
    }
  },
));

/** clients/README.md's first example, the one its quick start runs. */
async function quickStartExample(): Promise<string> {
  const readme = await Deno.readTextFile(`${CLIENTS}README.md`);
  const block = /```ts\n([^]*?)```/.exec(readme);
  if (!block) throw new Error("clients/README.md has no ts block");
  return block[1];
}

Deno.test(withTool(
  "clients/README.md's example runs as it says, as index.mjs in a CommonJS Node project",
  NODE,
  async () => {
    await using svc = await startService();
    const out = await Deno.makeTempDir({ prefix: "user-admin-node-client-" });
    try {
      // The client compiled as in the test above, installed into a project
      // as npm init makes it (CommonJS).
      const client = `${out}/client`;
      await Deno.mkdir(client);
      await nodeProject(client);
      compile(client);
      const app = `${out}/app`;
      await Deno.mkdir(`${app}/node_modules/@user-admin`, { recursive: true });
      await Deno.symlink(client, `${app}/node_modules/@user-admin/client`);
      await Deno.writeTextFile(
        `${app}/package.json`,
        JSON.stringify({ name: "app", version: "1.0.0", type: "commonjs" }),
      );
      const example = await quickStartExample();
      assertEquals(example.includes('"http://127.0.0.1:8000"'), true);
      await Deno.writeTextFile(
        `${app}/index.mjs`,
        example
          .replace('"http://127.0.0.1:8000"', JSON.stringify(svc.baseUrl))
          .replace(
            '"the password printed at the first start"',
            JSON.stringify(ADMIN.password),
          ),
      );
      const run = await new Deno.Command("node", {
        args: ["index.mjs"],
        cwd: app,
      }).output();
      const text = (b: Uint8Array) => new TextDecoder().decode(b).trim();
      assertEquals(run.code, 0, text(run.stderr));
      const bob = await svc.adminFetch("/api/users?username=bob");
      const [{ id }] = await bob.json();
      assertEquals(text(run.stdout), `201 ${id}`);
    } finally {
      await Deno.remove(out, { recursive: true });
    }
  },
));
