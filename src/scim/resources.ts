/**
 * Users and groups as SCIM resources (user-resource.ts, group-resource.ts),
 * and what a request's `attributes` and `excludedAttributes` leave of them.
 */
import { isObject, type Json } from "./body.ts";
import { ENTERPRISE_SCHEMA, GROUP_SCHEMA, USER_SCHEMA } from "./schema.ts";

export { booleanOf } from "./body.ts";
export {
  groupFromBody,
  groupResource,
  groupVersion,
  memberId,
} from "./group-resource.ts";
export { userFromBody, userResource, userVersion } from "./user-resource.ts";

/**
 * The resource with only `attributes` (and `id`, `schemas`, which are
 * always returned), or without `excluded`: paths as `userName`,
 * `name.givenName`, a schema URN and `:` before either.
 */
export function project(
  resource: Json,
  attributes: string[] | undefined,
  excluded: string[] | undefined,
): Json {
  const split = (path: string): string[] => {
    const lower = path.toLowerCase();
    for (const urn of [USER_SCHEMA, GROUP_SCHEMA]) {
      if (lower.startsWith(urn.toLowerCase() + ":")) {
        return split(path.slice(urn.length + 1));
      }
    }
    if (lower.startsWith(ENTERPRISE_SCHEMA.toLowerCase())) {
      const rest = path.slice(ENTERPRISE_SCHEMA.length + 1);
      return rest ? [ENTERPRISE_SCHEMA, ...rest.split(".")] : [
        ENTERPRISE_SCHEMA,
      ];
    }
    return path.split(".");
  };
  const keyOf = (o: Json, name: string) =>
    Object.keys(o).find((k) => k.toLowerCase() === name.toLowerCase());
  if (attributes && attributes.length > 0) {
    const out: Json = { schemas: resource.schemas, id: resource.id };
    for (const path of attributes) {
      const [head, ...rest] = split(path);
      const key = keyOf(resource, head);
      if (key === undefined) continue;
      const value = resource[key];
      if (rest.length === 0) {
        out[key] = value;
        continue;
      }
      const pick = (v: unknown): unknown => {
        if (Array.isArray(v)) return v.map(pick);
        if (!isObject(v)) return undefined;
        const sub = keyOf(v, rest.join("."));
        return sub === undefined ? {} : { [sub]: v[sub] };
      };
      const picked = pick(value);
      const prior = out[key];
      out[key] = Array.isArray(picked)
        ? picked.map((p, i) => ({
          ...(Array.isArray(prior) ? prior[i] as Json : {}),
          ...p as Json,
        }))
        : { ...(isObject(prior) ? prior : {}), ...picked as Json };
    }
    return out;
  }
  if (excluded && excluded.length > 0) {
    const out: Json = structuredClone(resource);
    for (const path of excluded) {
      const [head, ...rest] = split(path);
      const key = keyOf(out, head);
      if (key === undefined || key === "id" || key === "schemas") continue;
      if (rest.length === 0) {
        delete out[key];
        continue;
      }
      const drop = (v: unknown) => {
        if (Array.isArray(v)) return v.forEach(drop);
        if (!isObject(v)) return;
        const sub = keyOf(v, rest.join("."));
        if (sub !== undefined) delete v[sub];
      };
      drop(out[key]);
    }
    return out;
  }
  return resource;
}
