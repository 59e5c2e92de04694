/**
 * The service's own modules (src/) form layers that run one way: no import
 * cycle, and no import against the direction of the layers below. The
 * graph is Deno's own (`deno info --json`, once per entry point: main.ts
 * and src/cli/*.ts), so it sees every import the runtime and the type
 * checker see, dynamic ones included.
 *
 * Type-only imports (`import type`) count, for cycles as for directions:
 * a type belongs to the module that owns its concept, and importing it
 * from there never needs a cycle; a cycle through types alone is the same
 * tangle waiting for its first runtime import.
 */
import { assert, assertEquals } from "./support/assert.ts";

const ROOT = new URL("../", import.meta.url);

/** What `deno info --json` gives per module (the part read here). */
interface InfoModule {
  specifier: string;
  dependencies?: {
    specifier: string;
    isDynamic?: boolean;
    code?: { specifier: string };
    type?: { specifier: string };
  }[];
}

/** How one module imports another: at run time, or for its types only. */
type Kind = "code" | "type";
/** Importer → imported → how, both as paths from the repository root. */
type Graph = Map<string, Map<string, Kind>>;

const entryPoints = (): string[] => [
  "main.ts",
  ...[...Deno.readDirSync(new URL("src/cli/", ROOT))]
    .filter((e) => e.isFile && e.name.endsWith(".ts"))
    .map((e) => `src/cli/${e.name}`)
    .sort(),
];

async function info(entry: string): Promise<InfoModule[]> {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", entry],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  assertEquals(code, 0, `deno info ${entry}: ${text.decode(stderr)}`);
  return JSON.parse(text.decode(stdout)).modules;
}

/** The repository path of a file: URL, or undefined outside the repository. */
const local = (specifier: string) =>
  specifier.startsWith(ROOT.href)
    ? specifier.slice(ROOT.href.length)
    : undefined;

async function build(): Promise<Graph> {
  const graph: Graph = new Map();
  for (const modules of await Promise.all(entryPoints().map(info))) {
    for (const module of modules) {
      const from = local(module.specifier);
      if (!from?.startsWith("src/")) continue;
      const imports = graph.get(from) ?? new Map<string, Kind>();
      graph.set(from, imports);
      for (const dependency of module.dependencies ?? []) {
        // One entry per specifier: `code` when any import of it is
        // evaluated, `type` when any is type-only.
        const to = local(dependency.code?.specifier ?? "") ??
          local(dependency.type?.specifier ?? "");
        if (!to?.startsWith("src/")) continue;
        if (dependency.code || imports.get(to) === "code") {
          imports.set(to, "code");
        } else imports.set(to, "type");
      }
    }
  }
  return graph;
}

let cached: Promise<Graph> | undefined;
/** One graph for every test of this file: deno info runs once per entry point. */
const moduleGraph = () => cached ??= build();

/** Strongly connected components of more than one module (Tarjan). */
function cycles(graph: Graph, kinds: Kind[]): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const next = (from: string) =>
    [...graph.get(from) ?? []].filter(([, k]) => kinds.includes(k)).map((
      [to],
    ) => to);
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of next(v)) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      const selfImport = graph.get(v)?.has(v);
      if (component.length > 1 || selfImport) found.push(component.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return found;
}

/** The shortest way round from the first module of a cycle back to itself. */
function loop(graph: Graph, component: string[], kinds: Kind[]): string[] {
  const start = component[0];
  const inside = new Set(component);
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length) {
    const v = queue.shift()!;
    for (const [w, k] of graph.get(v) ?? []) {
      if (!kinds.includes(k) || !inside.has(w)) continue;
      if (w === start) {
        const path = [start];
        for (let at = v; at !== start; at = previous.get(at)!) {
          path.splice(1, 0, at);
        }
        return [...path, start];
      }
      if (!previous.has(w)) {
        previous.set(w, v);
        queue.push(w);
      }
    }
  }
  return component;
}

function describeCycles(graph: Graph, kinds: Kind[]): string[] {
  return cycles(graph, kinds).map((component) => {
    const path = loop(graph, component, kinds);
    const steps = path.slice(1).map((to, i) =>
      `${graph.get(path[i])?.get(to) === "type" ? " →(type) " : " → "}${to}`
    );
    return `${component.length} modules: ${component.join(", ")}\n    e.g. ${
      path[0]
    }${steps.join("")}`;
  });
}

// The layers, as path tests.
const under = (dir: string) => (path: string) => path.startsWith(dir);
const isRoutes = (path: string) => path.endsWith(".routes.ts");
const isHandlers = (path: string) => path.endsWith(".handlers.ts");
/**
 * The service's own endpoints, each its route and handler in one file
 * (GET /health, GET /), named by what they serve.
 */
const OWN_ENDPOINTS = ["src/health.ts", "src/home.ts"];
/** A feature's HTTP wiring: its routes, its handlers, the index that mounts them. */
const isHttpFace = (path: string) =>
  isRoutes(path) || isHandlers(path) || path.endsWith(".index.ts") ||
  OWN_ENDPOINTS.includes(path);
const HTTP_MESSAGES = "src/http/messages.ts";
/** The account domain: what an account is and which changes are allowed. */
const DOMAIN = [
  "src/users/user.ts",
  "src/users/canonical.ts",
  "src/users/account-rules.ts",
];
/** The HTTP machinery only the HTTP layer and its wiring build on. */
const HTTP_CORE = [
  "src/http/env.ts",
  "src/http/router.ts",
  "src/http/endpoint.ts",
];

interface Rule {
  /** What is forbidden, in words. */
  rule: string;
  applies: (from: string) => boolean;
  forbidden: (to: string) => boolean;
}

const RULES: Rule[] = [
  {
    rule:
      "src/db never imports the HTTP layer (src/http, src/scim, routes, handlers)",
    applies: under("src/db/"),
    forbidden: (to) =>
      under("src/http/")(to) || under("src/scim/")(to) || isRoutes(to) ||
      isHandlers(to),
  },
  {
    // src/scim is SCIM's HTTP layer: its answers, error form and steps are
    // what src/http's are to the JSON API.
    rule:
      "only src/http, src/scim, src/app.ts, src/server.ts and a feature's routes, handlers and index import http/env, http/router, http/endpoint",
    applies: (from) =>
      !under("src/http/")(from) && !under("src/scim/")(from) &&
      from !== "src/app.ts" && from !== "src/server.ts" && !isHttpFace(from),
    forbidden: (to) => HTTP_CORE.includes(to),
  },
  {
    rule:
      "src/accounts never imports routes, handlers or src/http but its messages",
    applies: under("src/accounts/"),
    forbidden: (to) =>
      isRoutes(to) || isHandlers(to) ||
      (under("src/http/")(to) && to !== HTTP_MESSAGES),
  },
  {
    rule:
      "src/audit (but its own routes, handlers and index) never imports src/http but its messages",
    applies: (from) => under("src/audit/")(from) && !isHttpFace(from),
    forbidden: (to) => under("src/http/")(to) && to !== HTTP_MESSAGES,
  },
  {
    rule: "the account domain never imports src/db",
    applies: (from) => DOMAIN.includes(from),
    forbidden: under("src/db/"),
  },
  {
    rule:
      "the account domain never imports routes, handlers or src/http but its messages",
    applies: (from) => DOMAIN.includes(from),
    forbidden: (to) =>
      isRoutes(to) || isHandlers(to) ||
      (under("src/http/")(to) && to !== HTTP_MESSAGES),
  },
];

function violations(graph: Graph): string[] {
  const found: string[] = [];
  for (const { rule, applies, forbidden } of RULES) {
    const broken = [...graph].filter(([from]) => applies(from)).flatMap((
      [from, imports],
    ) =>
      [...imports].filter(([to]) => forbidden(to)).map(([to, kind]) =>
        `    ${from} → ${to}${kind === "type" ? " (type only)" : ""}`
      )
    ).sort();
    if (broken.length) found.push(`${rule}:\n${broken.join("\n")}`);
  }
  return found;
}

Deno.test("the graph reaches every module of src/ from main.ts or src/cli (migrations are read by name)", async () => {
  const graph = await moduleGraph();
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of Deno.readDirSync(new URL(dir, ROOT))) {
      const path = `${dir}${entry.name}`;
      if (entry.isDirectory) walk(`${path}/`);
      else if (/\.tsx?$/.test(entry.name)) files.push(path);
    }
  };
  walk("src/");
  const unreached = files.filter((path) =>
    !graph.has(path) && !path.startsWith("src/db/migrations/")
  ).sort();
  assertEquals(unreached, [], "modules no entry point imports");
  // The rules below hold for the code they see: a graph of a handful of
  // modules would pass them all.
  assert(graph.size > 100, `only ${graph.size} modules in the graph`);
});

Deno.test("no import cycle among src/ modules, type-only imports included", async () => {
  const graph = await moduleGraph();
  const runtime = describeCycles(graph, ["code"]);
  const any = describeCycles(graph, ["code", "type"]);
  assert(
    runtime.length === 0 && any.length === 0,
    [
      ...runtime.map((c) => `cycle of run-time imports, ${c}`),
      ...any.map((c) => `cycle of imports (type-only included), ${c}`),
    ].join("\n"),
  );
});

Deno.test("imports run one way between the layers", async () => {
  const found = violations(await moduleGraph());
  assert(
    found.length === 0,
    `imports against the layers:\n${found.join("\n")}`,
  );
});
