import {
  createUserAdminClient,
  type UserAdminClient,
} from "@user-admin/client";
import { assert, assertEquals } from "./assert.ts";
import type { TestService } from "./service.ts";

/** A client that sends the key and nothing else (no login, no cookie). */
export function keyClient(svc: TestService, apiKey: string): UserAdminClient {
  return createUserAdminClient({
    baseUrl: svc.baseUrl,
    apiKey,
    fetch: (request) => forward(svc, request),
  });
}

/** A client's Request sent through the service's recorded fetch. */
async function forward(svc: TestService, request: Request) {
  const url = new URL(request.url);
  const body = request.body ? await request.text() : undefined;
  return svc.fetch(url.pathname + url.search, {
    method: request.method,
    headers: request.headers,
    body,
  });
}

/**
 * Creates a key for the user as `by` (the first admin's client unless
 * given); answers the 201's body.
 */
export async function createKey(
  svc: TestService,
  userId: number,
  name = "service",
  by: UserAdminClient = svc.admin,
) {
  const created = await by.post("/api/users/{id}/keys", {
    params: { path: { id: userId } },
    body: { name },
  });
  assert(created.ok, JSON.stringify(created));
  assertEquals(created.status, 201);
  return created.data;
}
