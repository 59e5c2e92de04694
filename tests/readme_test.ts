/**
 * README.md works as written: its first start prints the generated admin
 * last, set apart, and its curl walkthrough, taken from README.md itself,
 * runs with bash against that fresh start (only the port differs).
 */
import { assert, assertEquals, assertMatch } from "./support/assert.ts";
import { freePort } from "./support/process.ts";
import { testDatabase } from "./support/service.ts";

const ROOT = new URL("../", import.meta.url);

/** The first ```sh block of a README section, continuation lines kept. */
function shellBlock(readme: string, heading: string): string {
  const section = readme.split(/^## /m).find((s) => s.startsWith(heading));
  assert(section, `README has no "## ${heading}"`);
  const block = /```sh\n([^]*?)```/.exec(section);
  assert(block, `no sh block under "## ${heading}"`);
  return block[1];
}

/** The first plain ``` block (no language) of a README section. */
function outputBlock(readme: string, heading: string): string {
  const section = readme.split(/^## /m).find((s) => s.startsWith(heading));
  const blocks = [...(section ?? "").matchAll(/^```(\w*)\n([^]*?)^```$/gm)];
  const block = blocks.find(([, language]) => language === "");
  assert(block, `no output block under "## ${heading}"`);
  return block[2];
}

/**
 * A shown output line as a pattern: literal but for `...`, which stands
 * for whatever the README leaves out.
 */
const shownLine = (line: string) =>
  new RegExp(
    `^${
      line.split("...").map((part) =>
        part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
      ).join(".*")
    }$`,
  );

/**
 * `deno task start`'s own command line (from deno.json), its stdout and
 * stderr in one stream as a terminal shows them.
 */
async function startAsReadmeSays(env: Record<string, string>) {
  const deno = JSON.parse(await Deno.readTextFile(new URL("deno.json", ROOT)));
  const command = `exec ${deno.tasks.start} 2>&1`;
  const child = new Deno.Command("bash", {
    args: ["-c", command],
    cwd: ROOT,
    env: {
      PATH: `${Deno.execPath().replace(/\/[^/]*$/, "")}:${
        Deno.env.get("PATH")
      }`,
      NO_COLOR: "1",
      ADMIN_USERNAME: "",
      ADMIN_PASSWORD: "",
      DATABASE_URL: "",
      ...env,
    },
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  let output = "";
  const reading = child.stdout.pipeThrough(new TextDecoderStream()).pipeTo(
    new WritableStream({ write: (chunk) => void (output += chunk) }),
  );
  return {
    output: () => output,
    async stop() {
      child.kill("SIGTERM");
      const status = await child.status;
      await reading;
      return status.code;
    },
  };
}

Deno.test("README: the first start ends with the admin's credentials, and the curl walkthrough runs as written", async () => {
  await using db = await testDatabase();
  const port = freePort();
  const service = await startAsReadmeSays({
    ...db.env,
    HOST: "127.0.0.1",
    PORT: String(port),
  });
  try {
    // The credentials block closes the first start.
    const closed = /password: \S+\n[^]*?={40,}\n/;
    for (let i = 0; i < 1200 && !closed.test(service.output()); i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    const started = service.output();
    const password = /^ {4}password: (\S+)$/m.exec(started)?.[1];
    assert(password, started);
    const listening = started.indexOf('"msg":"listening"');
    const block = started.search(/\n\n={40,}\n/);
    assert(listening >= 0 && block > listening, started);
    assertMatch(
      started.slice(block),
      /^\n\n={40,}\n[^]*username: admin\n[^]*Sign in at http:\/\/localhost:\d+\/admin[^]*={40,}\n+$/,
    );

    const readme = await Deno.readTextFile(new URL("README.md", ROOT));
    const walkthrough = shellBlock(readme, "Calling it with curl");
    assert(walkthrough.includes("http://localhost:8000/"));
    const script = walkthrough.replaceAll(
      "http://localhost:8000/",
      `http://127.0.0.1:${port}/`,
    );
    // Each curl also reports its status on stderr, apart from what it
    // prints: appended to the README's own -w, which every curl gives.
    const prelude = `set -eo pipefail
curl() {
  local args=()
  while [ $# -gt 0 ]; do
    if [ "$1" = -w ]; then args+=(-w "$2%{stderr}STATUS %{http_code}\\n"); shift
    else args+=("$1"); fi
    shift
  done
  command curl "\${args[@]}"
}
`;
    const dir = await Deno.makeTempDir({ prefix: "user-admin-readme-" });
    try {
      const run = new Deno.Command("bash", {
        args: ["-c", prelude + script],
        cwd: dir,
        stdin: "piped",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const writer = run.stdin.getWriter();
      await writer.write(new TextEncoder().encode(`${password}\n`));
      await writer.close();
      const out = await run.output();
      const stdout = new TextDecoder().decode(out.stdout);
      const stderr = new TextDecoder().decode(out.stderr);
      assertEquals(out.code, 0, stderr);
      const statuses = [...stderr.matchAll(/^STATUS (\d+)$/gm)].map((m) =>
        Number(m[1])
      );
      // login, list, create, change, delete, logout
      assertEquals(statuses, [200, 200, 201, 200, 200, 200], stderr);
      // Every answer on a line of its own, as the README shows them.
      const shown = outputBlock(readme, "Calling it with curl")
        .trimEnd().split("\n");
      const printed = stdout.trimEnd().split("\n");
      assertEquals(printed.length, shown.length, stdout);
      shown.forEach((line, i) => assertMatch(printed[i], shownLine(line)));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  } finally {
    assertEquals(await service.stop(), 0);
  }
});

/** The documents a reader follows links through. */
async function documents(): Promise<URL[]> {
  const docs = await Array.fromAsync(Deno.readDir(new URL("docs/", ROOT)));
  return [
    "README.md",
    "clients/README.md",
    "tests/bench/RESULTS.md",
    ...docs.filter((e) => e.name.endsWith(".md")).map((e) => `docs/${e.name}`),
  ].map((path) => new URL(path, ROOT));
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
const anchorOf = (heading: string) =>
  heading.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, "")
    .replaceAll(" ", "-");

const anchorsOf = (markdown: string) =>
  new Set(
    [...markdown.replace(/```[^]*?```/g, "").matchAll(/^#{1,6} (.+)$/gm)]
      .map((m) => anchorOf(m[1])),
  );

Deno.test("every relative link of README.md and docs/*.md names a file (and heading) inside the repository", async () => {
  const broken: string[] = [];
  for (const file of await documents()) {
    const text = await Deno.readTextFile(file);
    const prose = text.replace(/```[^]*?```/g, "");
    const from = file.pathname.slice(ROOT.pathname.length);
    for (const [, target] of prose.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/i.test(target)) continue; // http:, https:, mailto:
      const [path, anchor] = target.split("#");
      const url = new URL(path || file.pathname, file);
      const inside = url.pathname.startsWith(ROOT.pathname);
      const exists = inside &&
        await Deno.stat(url).then(() => true, () => false);
      if (!exists) {
        broken.push(`${from}: ${target} (${inside ? "missing" : "outside"})`);
        continue;
      }
      if (anchor && url.pathname.endsWith(".md")) {
        const anchors = anchorsOf(await Deno.readTextFile(url));
        if (!anchors.has(anchor)) {
          broken.push(`${from}: ${target} (no heading)`);
        }
      }
    }
  }
  assertEquals(broken, []);
});

Deno.test("README.md is a newcomer's guide: its first block starts and tests, and it stays under 15,000 characters", async () => {
  const readme = await Deno.readTextFile(new URL("README.md", ROOT));
  const first = /```sh\n([^]*?)```/.exec(readme)?.[1] ?? "";
  assertEquals(
    first.split("\n").filter(Boolean).map((l) => l.split("#")[0].trim()),
    ["deno task start", "deno task test"],
  );
  assert(readme.length <= 15_000, `README.md is ${readme.length} characters`);
});
