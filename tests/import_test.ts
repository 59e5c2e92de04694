/**
 * Imports: users with passwords hashed by other systems' libraries come in
 * through `POST /api/imports`, log in with their old passwords, and have
 * their hashes replaced by bcrypt at the first login.
 */
import { Buffer } from "node:buffer";
import { createCipheriv, pbkdf2Sync, scryptSync } from "node:crypto";
import bcryptjs from "bcryptjs";
import { argon2i, argon2id } from "hash-wasm";
import { assert, assertEquals } from "./support/assert.ts";
import {
  ADMIN,
  loginCookie,
  sharedService,
  type TestService,
} from "./support/service.ts";

const service = sharedService();

/** Posts an import body and answers the status and JSON body. */
async function postImport(
  svc: TestService,
  body: BodyInit,
  { type = "application/x-ndjson", query = "" } = {},
) {
  const res = await svc.adminFetch(`/api/imports${query}`, {
    method: "POST",
    headers: { "content-type": type },
    body,
  });
  return {
    status: res.status,
    location: res.headers.get("location"),
    body: await res.json(),
  };
}

/** Polls the import until it ends; answers its last status. */
async function finished(svc: TestService, id: number, deadlineMs = 60_000) {
  const until = Date.now() + deadlineMs;
  for (;;) {
    const { data } = await svc.admin.GET("/api/imports/{id}", {
      params: { path: { id } },
    });
    if (data && !["queued", "running"].includes(data.status)) return data;
    if (Date.now() > until) throw new Error(`import ${id} did not end`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function importErrors(svc: TestService, id: number) {
  const { data } = await svc.admin.GET("/api/imports/{id}/errors", {
    params: { path: { id } },
  });
  return data!;
}

const ndjson = (records: unknown[]) =>
  records.map((r) => JSON.stringify(r)).join("\n") + "\n";

const person = (username: string, extra: Record<string, unknown> = {}) => ({
  username,
  name: `Person ${username}`,
  email: `${username}@example.com`,
  ...extra,
});

Deno.test("a body of NDJSON is stored, queued and answered 202 with its Location", async () => {
  const svc = await service();
  const res = await postImport(
    svc,
    ndjson([person("plain1", { password: "plain-password-1" })]),
  );
  assertEquals(res.status, 202);
  assertEquals(res.body.status, "queued");
  assertEquals(res.location, `/api/imports/${res.body.id}`);
  const done = await finished(svc, res.body.id);
  assertEquals(done.status, "finished");
  assertEquals(done.total, 1);
  assertEquals(done.created, 1);
  const login = await svc.client().login("plain1", "plain-password-1");
  assert(login.ok, "the imported user logs in");
});
