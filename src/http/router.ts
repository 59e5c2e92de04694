import type { Result, Router } from "hono/router";
import { TrieRouter } from "hono/router/trie-router";

/**
 * Hono's TrieRouter, with the answer for each route of a fixed path (no
 * parameter, no wildcard) kept once found: most requests (`me`, the list,
 * login) name such a path, and the trie splits the path and walks its
 * nodes again on every request otherwise. Hono's RegExpRouter, which keeps
 * fixed paths so, cannot hold `GET /api/users/export` beside
 * `GET /api/users/{id}` (it refuses paths two routes share), so Hono would
 * fall back to the trie for all.
 *
 * Only the paths of routes are kept, so the memory is bounded by the routes;
 * a kept answer is the trie's own (every route that matches, in order), as
 * a fixed path's answer does not depend on the request.
 */
export class FixedPathRouter<T> implements Router<T> {
  name = "FixedPathRouter";
  readonly #trie = new TrieRouter<T>();
  /** By method, then path: the fixed paths of routes, and their answer once found. */
  readonly #fixed = new Map<string, Map<string, Result<T> | undefined>>();

  add(method: string, path: string, handler: T) {
    this.#trie.add(method, path, handler);
    // A new route may also match a kept path (a parameter, a wildcard, or
    // the method ALL): every kept answer is found again.
    for (const paths of this.#fixed.values()) {
      for (const p of paths.keys()) paths.set(p, undefined);
    }
    if (!/[:*?]/.test(path)) {
      let paths = this.#fixed.get(method);
      if (!paths) this.#fixed.set(method, paths = new Map());
      paths.set(path, undefined);
    }
  }

  match(method: string, path: string): Result<T> {
    const paths = this.#fixed.get(method);
    if (paths === undefined || !paths.has(path)) {
      return this.#trie.match(method, path);
    }
    let found = paths.get(path);
    if (found === undefined) {
      found = this.#trie.match(method, path);
      paths.set(path, found);
    }
    return found;
  }
}
