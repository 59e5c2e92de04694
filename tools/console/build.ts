/**
 * Builds the admin console: console/src/ into console/dist/ (index.html,
 * app.js, app.css, icon.svg), bundled and minified by esbuild, pinned in
 * tools/console/bundler/package.json and installed there by npm.
 *
 *   deno task build:console          writes console/dist/
 *   deno task check:console          fails when console/dist/ is not what
 *                                    the sources build to, or too large
 *
 * The built files are committed, so the service serves them as they are
 * and needs neither npm nor esbuild at run time.
 */
import { createRequire } from "node:module";
import { gzipSync } from "node:zlib";

const ROOT = new URL("../../", import.meta.url);
const SRC = new URL("console/src/", ROOT);
const DIST = new URL("console/dist/", ROOT);
const TOOLS = new URL("./bundler/", import.meta.url);
/** Script and style together, gzipped (decisions: "The admin console"). */
export const MAX_GZIPPED_BYTES = 200 * 1024;

interface Esbuild {
  version: string;
  build(options: Record<string, unknown>): Promise<{
    outputFiles: { path: string; contents: Uint8Array }[];
  }>;
  stop(): void;
}

interface Plugin {
  name: string;
  setup(build: {
    onResolve(
      options: { filter: RegExp },
      callback: (args: { path: string }) => { path: string } | undefined,
    ): void;
  }): void;
}

async function install() {
  const npm = new Deno.Command("npm", {
    args: [
      "install",
      "--prefix",
      TOOLS.pathname,
      "--prefer-offline",
      "--no-audit",
      "--no-fund",
      "--ignore-scripts",
      "--loglevel=error",
    ],
    stdout: "inherit",
    stderr: "inherit",
  });
  const { success } = await npm.output();
  if (!success) throw new Error("npm install in tools/console/bundler failed");
}

/**
 * `npm:NAME@VERSION` imports (clients/mod.ts names openapi-fetch so, for
 * Deno) resolve to the package Deno installed in node_modules/, which must
 * be that version.
 */
const npmSpecifiers: Plugin = {
  name: "npm-specifiers",
  setup(build) {
    build.onResolve({ filter: /^npm:/ }, (args) => {
      const m = /^npm:((?:@[^/]+\/)?[^@/]+)@([^/]+)(\/.*)?$/.exec(args.path);
      if (!m) return undefined;
      const [, name, version, sub = ""] = m;
      const dir = new URL(`node_modules/${name}/`, ROOT);
      const pkg = JSON.parse(
        Deno.readTextFileSync(new URL("package.json", dir)),
      );
      if (pkg.version !== version) {
        throw new Error(
          `${args.path}: node_modules has ${name}@${pkg.version} (deno install)`,
        );
      }
      const require = createRequire(dir);
      return { path: require.resolve(`${name}${sub}`) };
    });
  },
};

const hash = async (bytes: Uint8Array) =>
  Array.from(
    new Uint8Array(
      await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>),
    ).slice(0, 8),
    (b) => b.toString(16).padStart(2, "0"),
  ).join("");

/** The files console/dist/ should hold, by name. */
export async function build(): Promise<Map<string, Uint8Array>> {
  await install();
  const esbuild = createRequire(TOOLS)("esbuild") as Esbuild;
  try {
    const result = await esbuild.build({
      entryPoints: {
        app: new URL("main.tsx", SRC).pathname,
        "app-style": new URL("style.css", SRC).pathname,
      },
      outdir: DIST.pathname,
      bundle: true,
      minify: true,
      write: false,
      format: "esm",
      target: ["es2022", "chrome110", "firefox110", "safari16"],
      jsx: "automatic",
      jsxImportSource: "preact",
      nodePaths: [new URL("node_modules/", ROOT).pathname],
      legalComments: "none",
      charset: "utf8",
      logLevel: "warning",
      plugins: [npmSpecifiers],
    });
    const byName = new Map<string, Uint8Array>();
    for (const file of result.outputFiles) {
      const name = file.path.slice(file.path.lastIndexOf("/") + 1);
      byName.set(name === "app-style.css" ? "app.css" : name, file.contents);
    }
    const js = byName.get("app.js")!;
    const css = byName.get("app.css")!;
    const html = Deno.readTextFileSync(new URL("index.html", SRC))
      .replace("%JS_HASH%", await hash(js))
      .replace("%CSS_HASH%", await hash(css));
    return new Map([
      ["index.html", new TextEncoder().encode(html)],
      ["app.js", js],
      ["app.css", css],
      ["icon.svg", Deno.readFileSync(new URL("icon.svg", SRC))],
    ]);
  } finally {
    esbuild.stop();
  }
}

/** Script and style, each gzipped, in bytes. */
export function gzippedSize(files: Map<string, Uint8Array>): number {
  let total = 0;
  for (const [name, bytes] of files) {
    if (name.endsWith(".js") || name.endsWith(".css")) {
      total += gzipSync(bytes, { level: 9 }).length;
    }
  }
  return total;
}

const same = (a: Uint8Array, b: Uint8Array) =>
  a.length === b.length && a.every((x, i) => x === b[i]);

if (import.meta.main) {
  const check = Deno.args.includes("--check");
  const files = await build();
  const size = gzippedSize(files);
  const kib = (size / 1024).toFixed(1);
  if (size > MAX_GZIPPED_BYTES) {
    console.error(`console: ${kib} KiB of script and style gzipped, over 200`);
    Deno.exit(1);
  }
  if (check) {
    const stale: string[] = [];
    for (const [name, bytes] of files) {
      const committed = await Deno.readFile(new URL(name, DIST)).catch(() =>
        undefined
      );
      if (!committed || !same(committed, bytes)) stale.push(name);
    }
    const extra = [...Deno.readDirSync(DIST)].map((e) => e.name)
      .filter((name) => !files.has(name));
    if (stale.length || extra.length) {
      console.error(
        `console/dist is stale (${
          [...stale, ...extra.map((e) => `${e} (not built)`)].join(", ")
        }): run deno task build:console and commit it`,
      );
      Deno.exit(1);
    }
    console.log(`console/dist is fresh (${kib} KiB gzipped)`);
  } else {
    await Deno.mkdir(DIST, { recursive: true });
    for (const entry of Deno.readDirSync(DIST)) {
      if (!files.has(entry.name)) await Deno.remove(new URL(entry.name, DIST));
    }
    for (const [name, bytes] of files) {
      await Deno.writeFile(new URL(name, DIST), bytes);
    }
    console.log(`console/dist written (${kib} KiB gzipped)`);
  }
}
