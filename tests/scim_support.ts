/**
 * What the SCIM tests share: a provisioning connection made through the
 * API, and requests to /scim/v2 with its token, as an identity provider
 * sends them.
 */
import type { TestService } from "./support/service.ts";
import { assertEquals } from "./support/assert.ts";

export const SCIM_MEDIA_TYPE = "application/scim+json";
export const USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User";
export const GROUP_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Group";
export const PATCH_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:PatchOp";
export const ERROR_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:Error";
export const LIST_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:ListResponse";
export const ENTERPRISE =
  "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User";

/** A connection made by the first admin, with its token. */
export async function createConnection(
  svc: TestService,
  name = "Okta",
  adminGroups: string[] = [],
) {
  const { data, response } = await svc.admin.POST("/api/scim/connections", {
    body: { name, adminGroups },
  });
  assertEquals(response.status, 201);
  return data!;
}

/** The service without the connections, groups and links earlier tests of the file made. */
export async function clearScim(svc: TestService) {
  await svc.sql`delete from scim_members`;
  await svc.sql`delete from scim_groups`;
  await svc.sql`delete from scim_user_links`;
  await svc.sql`delete from scim_connections`;
}

/** A shared service's getter that clears SCIM state first. */
export const freshScim = (service: () => Promise<TestService>) => async () => {
  const svc = await service();
  await clearScim(svc);
  return svc;
};

export interface ScimAnswer {
  status: number;
  headers: Headers;
  // deno-lint-ignore no-explicit-any
  body: any;
}

/** An identity provider's client: requests with the token, as SCIM JSON. */
export function scimClient(svc: TestService, token: string) {
  const call = async (
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<ScimAnswer> => {
    const res = await svc.fetch(`/scim/v2${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        accept: SCIM_MEDIA_TYPE,
        ...body !== undefined && { "content-type": SCIM_MEDIA_TYPE },
        ...headers,
      },
      body: body === undefined
        ? undefined
        : typeof body === "string"
        ? body
        : JSON.stringify(body),
    });
    const text = await res.text();
    return {
      status: res.status,
      headers: res.headers,
      body: text ? JSON.parse(text) : undefined,
    };
  };
  return {
    get: (path: string, headers?: Record<string, string>) =>
      call("GET", path, undefined, headers),
    post: (path: string, body: unknown, headers?: Record<string, string>) =>
      call("POST", path, body, headers),
    put: (path: string, body: unknown, headers?: Record<string, string>) =>
      call("PUT", path, body, headers),
    patch: (path: string, body: unknown, headers?: Record<string, string>) =>
      call("PATCH", path, body, headers),
    delete: (path: string, headers?: Record<string, string>) =>
      call("DELETE", path, undefined, headers),
  };
}

/**
 * A shared service cleared of SCIM state, a connection "Okta" and its
 * client, and one user it provisioned (frank@example.com, `ext-frank`).
 */
export async function withFrank(svc: TestService) {
  await clearScim(svc);
  const conn = await createConnection(svc, "Okta");
  const idp = scimClient(svc, conn.token);
  const user = await idp.post("/Users", {
    userName: "frank@example.com",
    displayName: "Frank",
    externalId: "ext-frank",
  });
  assertEquals(user.status, 201);
  return { svc, conn, idp, userId: user.body.id as string };
}

/** A PatchOp body of these operations. */
export const patchOp = (...Operations: unknown[]) => ({
  schemas: [PATCH_SCHEMA],
  Operations,
});

/** Asserts a SCIM error answer: status, scimType (or none). */
export function assertScimError(
  answer: ScimAnswer,
  status: number,
  scimType?: string,
) {
  assertEquals(
    { status: answer.status, scimType: answer.body?.scimType },
    { status, scimType },
    JSON.stringify(answer.body),
  );
  assertEquals(answer.body.schemas, [ERROR_SCHEMA]);
  assertEquals(answer.body.status, String(status));
  assertEquals(typeof answer.body.detail, "string");
  assertEquals(answer.headers.get("content-type"), SCIM_MEDIA_TYPE);
}

/**
 * What a write that changes nothing (refused, or asking for what is there)
 * must leave as it was: the rows, their versions and the audit trail.
 */
export async function scimState(svc: TestService) {
  await svc.store.audit.seal();
  return await svc.sql`
    select (select count(*)::int from audit_events) as records,
      (select json_agg(u order by u.id) from users u) as users,
      (select json_agg(l order by l.user_id) from scim_user_links l) as links,
      (select json_agg(g order by g.id) from scim_groups g) as groups`;
}
