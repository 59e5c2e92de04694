/** Import bodies as the import tests write them, and the job followed to its end. */
import { assertEquals } from "./assert.ts";
import type { TestService } from "./service.ts";

/** NDJSON of the records, each line ended. */
export const ndjson = (records: unknown[]) =>
  records.map((r) => JSON.stringify(r)).join("\n") + "\n";

/** An import record of this username, its name and e-mail made from it. */
export const person = (
  username: string,
  extra: Record<string, unknown> = {},
) => ({
  username,
  name: `Person ${username}`,
  email: `${username}@example.com`,
  ...extra,
});

/** Posts an import body as the admin; answers the status, Location and JSON body. */
export async function postImport(
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
export async function finished(
  svc: TestService,
  id: number,
  deadlineMs = 60_000,
) {
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

/** The import's refused lines. */
export async function importErrors(svc: TestService, id: number) {
  const { data } = await svc.admin.GET("/api/imports/{id}/errors", {
    params: { path: { id } },
  });
  return data!;
}

/** An import posted (202 expected), followed to its end: its status and refused lines. */
export async function runImport(
  svc: TestService,
  body: BodyInit,
  options: { type?: string; query?: string } = {},
) {
  const res = await postImport(svc, body, options);
  assertEquals(res.status, 202, JSON.stringify(res.body));
  const done = await finished(svc, res.body.id);
  return { done, errors: await importErrors(svc, res.body.id) };
}
