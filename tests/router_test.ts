/**
 * The app's router keeps the answer for each fixed path: whatever it
 * answers must be what Hono's TrieRouter answers for the same routes, for
 * every route's path and the paths around them, kept or not, and after a
 * route added later that also matches a kept path.
 */
import type { Result } from "hono/router";
import { TrieRouter } from "hono/router/trie-router";
import { FixedPathRouter } from "../src/http/router.ts";
import { assertEquals } from "./support/assert.ts";
import { startService } from "./support/service.ts";

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/** What a match says, comparable: each handler's route and its parameters. */
const shown = <T>(result: Result<T>, name: (h: T) => string) =>
  result[0].map(([handler, params]) => {
    const values = result[1]
      ? Object.fromEntries(
        Object.entries(params).map(([k, i]) => [k, result[1]![i as number]]),
      )
      : params;
    return [name(handler), values];
  });

Deno.test("the fixed-path router answers as Hono's trie for every route's path, twice, and after a route added later", async () => {
  await using svc = await startService();
  const routes = svc.app.routes.map((r, i) => ({ ...r, id: `${i}` }));
  const fixed = new FixedPathRouter<string>();
  const trie = new TrieRouter<string>();
  for (const r of routes) {
    fixed.add(r.method, r.path, r.id);
    trie.add(r.method, r.path, r.id);
  }
  const paths = new Set<string>(["/", "/nope", "/api/users/", "/api//me"]);
  for (const r of routes) {
    paths.add(r.path);
    paths.add(r.path.replaceAll(/:[^/]+/g, "12"));
    paths.add(r.path.replaceAll(/:[^/]+/g, "export"));
    paths.add(r.path.replace("*", "x/y.js"));
    paths.add(`${r.path}/more`);
    paths.add(r.path.toUpperCase());
  }
  const same = (round: string) => {
    for (const method of METHODS) {
      for (const path of paths) {
        assertEquals(
          shown(fixed.match(method, path), String),
          shown(trie.match(method, path), String),
          `${round}: ${method} ${path}`,
        );
      }
    }
  };
  same("first");
  same("kept");
  // A route that also takes fixed paths already kept.
  fixed.add("ALL", "/api/*", "all");
  trie.add("ALL", "/api/*", "all");
  fixed.add("GET", "/api/auth/:what", "what");
  trie.add("GET", "/api/auth/:what", "what");
  same("after more routes");
  same("after more routes, kept");
});
