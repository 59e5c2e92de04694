/**
 * Hash routes (`/admin#/users/7`): the service serves one page at /admin
 * and every view lives after the `#`, so reloads and the back button work
 * without the server knowing the console's paths.
 */
import { useEffect, useState } from "preact/hooks";

export interface Location {
  /** `/users/7` */
  path: string;
  /** The part after `?` in the hash. */
  query: URLSearchParams;
}

export function currentLocation(): Location {
  const hash = location.hash.replace(/^#/, "") || "/overview";
  const q = hash.indexOf("?");
  return q < 0 ? { path: hash, query: new URLSearchParams() } : {
    path: hash.slice(0, q),
    query: new URLSearchParams(hash.slice(q + 1)),
  };
}

/** The href of a view, with its query (empty values left out). */
export function href(
  path: string,
  query: Record<string, string | undefined> = {},
): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v) params.set(k, v);
  const s = params.toString();
  return `#${path}${s ? `?${s}` : ""}`;
}

/** Goes to a view; `replace` keeps the back button where it was. */
export function navigate(to: string, replace = false) {
  if (replace) history.replaceState(null, "", to);
  else history.pushState(null, "", to);
  dispatchEvent(new HashChangeEvent("hashchange"));
}

/** The current location, updated on every hash change. */
export function useLocation(): Location {
  const [loc, setLoc] = useState(currentLocation);
  useEffect(() => {
    const update = () => setLoc(currentLocation());
    addEventListener("hashchange", update);
    return () => removeEventListener("hashchange", update);
  }, []);
  return loc;
}

/**
 * Matches `/users/:id` against `/users/7`: `{id: "7"}`, or undefined, also
 * when a parameter is no valid percent-encoding (`%E0%A4%A`): such an
 * address names no page.
 */
export function match(
  pattern: string,
  path: string,
): Record<string, string> | undefined {
  const want = pattern.split("/");
  const got = path.split("/");
  if (want.length !== got.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    if (want[i].startsWith(":")) {
      const value = decoded(got[i]);
      if (value === undefined) return undefined;
      params[want[i].slice(1)] = value;
    } else if (want[i] !== got[i]) return undefined;
  }
  return params;
}

function decoded(part: string): string | undefined {
  try {
    return decodeURIComponent(part);
  } catch {
    return undefined;
  }
}
