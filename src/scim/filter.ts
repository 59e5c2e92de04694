/**
 * A SCIM filter's text parsed (RFC 7644 3.4.2.2), within the limits that
 * keep one request from holding the service: at most FILTER_MAX_LENGTH
 * characters, FILTER_MAX_COMPARISONS comparisons and FILTER_MAX_DEPTH levels
 * of nesting (parentheses and brackets in the text; `and`, `or`, `not` and
 * value paths within one another in the expression), and no control
 * character in the text or in a compared string. Both a list's `filter` and
 * a PATCH path's value filter are read here; the store compiles the result
 * to SQL (src/db/scim-filter.ts), the PATCH engine tests elements with it.
 */
import { type Filter, parse } from "scim2-parse-filter";
import { isRefusal, type Refusal, refuse } from "../refusal.ts";

export { isRefusal };

export const FILTER_MAX_LENGTH = 4096;
export const FILTER_MAX_COMPARISONS = 100;
export const FILTER_MAX_DEPTH = 20;

export const TOO_COMPLEX = "Filter too complex";
export const INVALID = "Invalid filter";

// C0 and C1 controls and DEL; a lone surrogate is no text either.
const CONTROL = /\p{Cc}|\p{Cs}/u;

/**
 * Parentheses and brackets open at once, outside quoted strings: read
 * before the parser, whose recursion follows them.
 */
function bracketDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch === "\\") i++;
      else if (ch === '"') quoted = false;
    } else if (ch === '"') quoted = true;
    else if (ch === "(" || ch === "[") deepest = Math.max(deepest, ++depth);
    else if (ch === ")" || ch === "]") depth--;
  }
  return deepest;
}

/** The expression's comparisons and its depth, or a refusal for a compared string. */
function measure(f: Filter): { comparisons: number; depth: number } | string {
  switch (f.op) {
    case "and":
    case "or": {
      let comparisons = 0;
      let depth = 0;
      for (const g of f.filters) {
        const m = measure(g);
        if (typeof m === "string") return m;
        comparisons += m.comparisons;
        depth = Math.max(depth, m.depth);
      }
      return { comparisons, depth: depth + 1 };
    }
    case "not":
    case "[]": {
      const m = measure(f.op === "not" ? f.filter : f.valFilter);
      return typeof m === "string"
        ? m
        : { comparisons: m.comparisons, depth: m.depth + 1 };
    }
    default:
      if ("compValue" in f && typeof f.compValue === "string") {
        if (CONTROL.test(f.compValue)) return INVALID;
      }
      return { comparisons: 1, depth: 0 };
  }
}

/**
 * The filter `text` parsed, or refused (`invalidFilter`): past a limit, or
 * not a filter at all. Of a PATCH's `path` (its raw text given), text that
 * cannot be parsed is a path that is not valid (`invalidPath`).
 */
export function parseFilter(text: string): Filter | Refusal<"invalidFilter">;
export function parseFilter(
  text: string,
  path: string,
): Filter | Refusal<"invalidFilter" | "invalidPath">;
export function parseFilter(
  text: string,
  path?: string,
): Filter | Refusal<"invalidFilter" | "invalidPath"> {
  if (text.length > FILTER_MAX_LENGTH) {
    return refuse("invalidFilter", TOO_COMPLEX);
  }
  if (CONTROL.test(text)) return refuse("invalidFilter", INVALID);
  if (bracketDepth(text) > FILTER_MAX_DEPTH) {
    return refuse("invalidFilter", TOO_COMPLEX);
  }
  let f: Filter;
  try {
    f = parse(text);
  } catch (e) {
    return path === undefined
      ? refuse(
        "invalidFilter",
        `the filter cannot be parsed: ${(e as Error).message}`,
      )
      : refuse("invalidPath", `${path}: the filter is not valid`);
  }
  const m = measure(f);
  if (typeof m === "string") return refuse("invalidFilter", m);
  if (
    m.comparisons > FILTER_MAX_COMPARISONS || m.depth > FILTER_MAX_DEPTH
  ) return refuse("invalidFilter", TOO_COMPLEX);
  return f;
}
