/**
 * The bounds of what one SCIM write may hold, so that no request holds the
 * service while it is applied: at most OPERATIONS_MAX operations in a
 * PATCH, at most VALUES_MAX values in a multi-valued attribute (a group's
 * members excepted: Group Push sends thousands), an `externalId` of at most
 * EXTERNAL_ID_MAX characters (a longer one would not fit its unique index).
 */
import type { ScimRefusal } from "../db/scim.ts";
import { refuse } from "../refusal.ts";
import { codePoints } from "../users/account-rules.ts";
import {
  type AttrDef,
  ENTERPRISE_ATTRIBUTES,
  ENTERPRISE_SCHEMA,
  findAttr,
} from "./schema.ts";

export const OPERATIONS_MAX = 1000;
export const VALUES_MAX = 100;
export const EXTERNAL_ID_MAX = 255;

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json =>
  typeof v === "object" && v !== null && !Array.isArray(v);

const invalid = (detail: string) => refuse("invalidValue", detail);

/** A multi-valued attribute of `o` past VALUES_MAX, as a refusal. */
function tooManyValues(o: Json, defs: AttrDef[]): ScimRefusal | undefined {
  for (const [key, value] of Object.entries(o)) {
    if (!Array.isArray(value) || value.length <= VALUES_MAX) continue;
    const def = findAttr(defs, key);
    if (def?.multi && def.name !== "members") {
      return invalid(`${def.name} holds at most ${VALUES_MAX} values`);
    }
  }
  return undefined;
}

/** The first bound `resource` (a body, or a PATCH's result so far) is past. */
export function pastLimits(
  resource: Json,
  defs: AttrDef[],
): ScimRefusal | undefined {
  for (const [key, value] of Object.entries(resource)) {
    const lower = key.toLowerCase();
    if (
      lower === "externalid" && typeof value === "string" &&
      value.length > EXTERNAL_ID_MAX && codePoints(value) > EXTERNAL_ID_MAX
    ) {
      return invalid(
        `externalId must be at most ${EXTERNAL_ID_MAX} characters`,
      );
    }
    if (lower === ENTERPRISE_SCHEMA.toLowerCase() && isObject(value)) {
      const f = tooManyValues(value, ENTERPRISE_ATTRIBUTES);
      if (f) return f;
    }
  }
  return tooManyValues(resource, defs);
}
