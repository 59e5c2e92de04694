/**
 * Builds the npm package of the client and packs it:
 *
 *   deno task client:npm
 *
 * The TypeScript compiler (the version deno.json pins) compiles mod.ts to
 * ESM JavaScript and declarations against openapi-fetch as npm installs it,
 * at the version clients/deno.json maps; `npm pack` makes the tarball. Its
 * absolute path is the last line printed. Everything goes to clients/npm/
 * (gitignored), made anew on every run.
 */
const CLIENTS = new URL(".", import.meta.url);
const ROOT = new URL("../", CLIENTS);
const OUT = new URL("npm/", CLIENTS);
const STAGE = new URL("stage/", OUT);
const PACKAGE = new URL("package/", STAGE);

interface DenoJson {
  name: string;
  version: string;
  license: string;
  imports: Record<string, string>;
}

const readJson = async (url: URL) => JSON.parse(await Deno.readTextFile(url));

async function run(cmd: string, args: string[], cwd: URL): Promise<string> {
  const out = await new Deno.Command(cmd, {
    args,
    cwd,
    stdout: "piped",
    stderr: "inherit",
  }).output();
  const stdout = new TextDecoder().decode(out.stdout);
  if (!out.success) {
    throw new Error(`${cmd} ${args.join(" ")} failed:\n${stdout}`);
  }
  return stdout;
}

/** The version of `npm:name@version` that an import map entry names. */
function npmVersion(specifier: string | undefined, name: string): string {
  const match = specifier?.match(/^npm:(@?[^@]+)@(.+)$/);
  if (!match || match[1] !== name) {
    throw new Error(`expected "npm:${name}@<version>", found ${specifier}`);
  }
  return match[2];
}

const client: DenoJson = await readJson(new URL("deno.json", CLIENTS));
const root: DenoJson = await readJson(new URL("deno.json", ROOT));
const fetchVersion = npmVersion(
  client.imports["openapi-fetch"],
  "openapi-fetch",
);
const tsc = `npm:typescript@${
  npmVersion(root.imports["typescript"], "typescript")
}/tsc`;

// mod.ts names openapi-fetch inline (so Deno can import it by path); npm
// resolves the bare name through package.json's dependency instead.
const inline = `"npm:openapi-fetch@${fetchVersion}"`;
const source = await Deno.readTextFile(new URL("mod.ts", CLIENTS));
if (!source.includes(inline)) {
  throw new Error(
    `clients/mod.ts must import ${inline}, the version clients/deno.json maps`,
  );
}

await Deno.remove(OUT, { recursive: true }).catch((e) => {
  if (!(e instanceof Deno.errors.NotFound)) throw e;
});
await Deno.mkdir(new URL("src/", STAGE), { recursive: true });
await Deno.mkdir(PACKAGE);
await Deno.writeTextFile(
  new URL("src/mod.ts", STAGE),
  source.replaceAll(inline, `"openapi-fetch"`),
);
await Deno.copyFile(
  new URL("schema.d.ts", CLIENTS),
  new URL("src/schema.d.ts", STAGE),
);

const packageJson = {
  name: client.name,
  version: client.version,
  description:
    "Typed client of the user administration service (openapi-fetch over its OpenAPI types)",
  license: client.license,
  type: "module",
  exports: { ".": { types: "./mod.d.ts", default: "./mod.js" } },
  main: "./mod.js",
  types: "./mod.d.ts",
  files: ["mod.js", "mod.d.ts", "schema.d.ts", "README.md", "LICENSE"],
  sideEffects: false,
  engines: { node: ">=20" },
  dependencies: { "openapi-fetch": fetchVersion },
};
await Deno.writeTextFile(
  new URL("package.json", PACKAGE),
  JSON.stringify(packageJson, null, 2) + "\n",
);

// The compiler sees openapi-fetch exactly as the package's users get it.
await Deno.writeTextFile(
  new URL("package.json", STAGE),
  JSON.stringify({ private: true, type: "module", dependencies: {} }),
);
await run("npm", [
  "install",
  "--no-audit",
  "--no-fund",
  "--ignore-scripts",
  "--save-exact",
  `openapi-fetch@${fetchVersion}`,
], STAGE);

await Deno.writeTextFile(
  new URL("tsconfig.json", STAGE),
  JSON.stringify(
    {
      compilerOptions: {
        module: "NodeNext",
        moduleResolution: "NodeNext",
        target: "ES2022",
        // Web APIs only (fetch, Headers.getSetCookie): no Deno or Node types.
        lib: ["ES2022", "DOM", "DOM.Iterable"],
        types: [],
        strict: true,
        // The declarations in node_modules and the standard library are not
        // checked again here; the test's typed consumer checks them all.
        skipLibCheck: true,
        declaration: true,
        rootDir: "src",
        outDir: "package",
        // mod.ts imports ./schema.d.ts by its file name, as Deno wants.
        allowImportingTsExtensions: true,
        rewriteRelativeImportExtensions: true,
      },
      files: ["src/mod.ts"],
    },
    null,
    2,
  ),
);
// Run from the repository root, so Deno takes the compiler from deno.lock.
await run("deno", [
  "run",
  "-A",
  tsc,
  "-p",
  new URL("tsconfig.json", STAGE).pathname,
], ROOT);
await Deno.copyFile(
  new URL("src/schema.d.ts", STAGE),
  new URL("schema.d.ts", PACKAGE),
);
await Deno.copyFile(new URL("LICENSE", CLIENTS), new URL("LICENSE", PACKAGE));
await Deno.writeTextFile(
  new URL("README.md", PACKAGE),
  packageReadme(
    await Deno.readTextFile(new URL("README.md", CLIENTS)),
    packageJson.files,
  ),
);

const packed = JSON.parse(
  await run("npm", ["pack", "--json", "--pack-destination", "../.."], PACKAGE),
);
console.log(new URL(packed[0].filename, OUT).pathname);

/**
 * The README as the tarball shows it: a relative link to a file the package
 * does not ship (the repository's tests, examples, sources) would be broken
 * on npm, so it becomes its plain text; links to shipped files stay.
 */
function packageReadme(markdown: string, shipped: readonly string[]) {
  return markdown.replace(
    /\[([^\]]+)\]\(([^)\s]+)\)/g,
    (link, text: string, target: string) =>
      /^[a-z][a-z0-9+.-]*:|^#/i.test(target) || shipped.includes(target)
        ? link
        : text,
  );
}
