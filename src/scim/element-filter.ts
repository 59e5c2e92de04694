/**
 * A PATCH value path's filter (`emails[type eq "work"]`) applied to the
 * elements of a multi-valued attribute: which it selects, and what an
 * element made for it holds.
 */
import { type Filter, filter as tester } from "scim2-parse-filter";
import { isObject, type Json } from "./body.ts";

const lowered = (x: unknown): unknown =>
  typeof x === "string"
    ? x.toLowerCase()
    : Array.isArray(x)
    ? x.map(lowered)
    : isObject(x)
    ? Object.fromEntries(Object.entries(x).map(([k, v]) => [k, lowered(v)]))
    : x;

/**
 * A value path's filter made a test of elements, once for all the elements
 * an operation looks at. Elements compare as the filter library does, with
 * their string values and the filter's taken without regard to case (every
 * sub-attribute filtered on here is so).
 */
export function elementTest(f: Filter): (el: unknown) => boolean {
  const test = tester(lowered(f) as Filter);
  return (el) => isObject(el) && test(lowered(el));
}

/** The sub-attributes an element made from a filter gets: its `eq` comparisons. */
export function seeded(f: Filter | undefined): Json {
  const out: Json = {};
  const walk = (g: Filter) => {
    if (g.op === "and") g.filters.forEach(walk);
    else if (g.op === "eq") out[g.attrPath] = g.compValue;
  };
  if (f) walk(f);
  return out;
}
