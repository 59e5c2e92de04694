/** Groups as SCIM resources, and SCIM bodies as groups. */
import type { ScimGroupRow, ScimGroupState, ScimRefusal } from "../db/scim.ts";
import { codePoints, nameCharactersAllowed } from "../users/account-rules.ts";
import { type Json, readBody } from "./body.ts";
import { isRefusal, refuse } from "../refusal.ts";
import { GROUP_ATTRIBUTES, GROUP_SCHEMA } from "./schema.ts";

export const groupVersion = (row: ScimGroupRow) =>
  `W/"g${row.id}.${row.version}"`;

export function groupResource(row: ScimGroupRow, base: string): Json {
  return {
    schemas: [GROUP_SCHEMA],
    id: String(row.id),
    ...row.externalId !== null && { externalId: row.externalId },
    displayName: row.displayName,
    ...row.members && {
      members: row.members.map((m) => ({
        value: String(m.value),
        display: m.display,
        type: "User",
        $ref: `${base}/Users/${m.value}`,
      })),
    },
    meta: {
      resourceType: "Group",
      created: row.created,
      lastModified: row.modified,
      version: groupVersion(row),
      location: `${base}/Groups/${row.id}`,
    },
  };
}

/** The largest id a member can have. */
const MAX_ID = 2 ** 31 - 1;

/** A group as a body (POST, PUT, or a PATCH's result) says it. */
export function groupFromBody(body: unknown): ScimGroupState | ScimRefusal {
  const read = readBody(body, GROUP_ATTRIBUTES);
  if (isRefusal(read)) return read;
  const { externalId, attrs } = read;
  const displayName = attrs.displayName;
  if (typeof displayName !== "string" || displayName.trim() === "") {
    return refuse("invalidValue", "displayName is required");
  }
  if (codePoints(displayName) > 256 || !nameCharactersAllowed(displayName)) {
    return refuse(
      "invalidValue",
      "displayName must be at most 256 characters, without control characters",
    );
  }
  const members: number[] = [];
  for (const m of (attrs.members as Json[] | undefined) ?? []) {
    const id = memberId(m.value);
    if (id === undefined) {
      return refuse(
        "invalidValue",
        `members: ${JSON.stringify(m.value ?? null)} is no user's id`,
      );
    }
    members.push(id);
  }
  return {
    displayName: displayName.trim(),
    externalId: (externalId as string | null | undefined) ?? null,
    members,
  };
}

export function memberId(value: unknown): number | undefined {
  if (typeof value !== "string" || !/^[1-9][0-9]{0,9}$/.test(value)) {
    return undefined;
  }
  const n = Number(value);
  return n <= MAX_ID ? n : undefined;
}
