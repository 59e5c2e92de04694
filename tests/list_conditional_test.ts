/**
 * Conditional requests: ETag on the list and on one user, If-None-Match ->
 * 304, If-Match -> 412 on PATCH and DELETE, each after the checks the
 * contract puts first.
 */
import { createUserAdminClient } from "@user-admin/client";
import { assert, assertEquals, assertNotEquals } from "./support/assert.ts";
import { sharedService, type TestService } from "./support/service.ts";

// bcrypt's work is not this file's subject: its cheapest cost.
const service = sharedService({}, { bcryptCost: 4 });

const STRONG_TAG = /^"[\x21\x23-\x7e]+"$/;

async function tagOf(svc: TestService, path: string) {
  const res = await svc.adminFetch(path);
  assertEquals(res.status, 200, path);
  await res.body?.cancel();
  const tag = res.headers.get("etag");
  assert(tag && STRONG_TAG.test(tag), `${path}: strong ETag, got ${tag}`);
  return tag;
}

async function conditional(
  svc: TestService,
  path: string,
  headers: Record<string, string>,
) {
  const res = await svc.adminFetch(path, { headers });
  const body = await res.text();
  return { status: res.status, etag: res.headers.get("etag"), body };
}

Deno.test("the list's ETag answers 304 while nothing changed and changes with every create, update and delete", async () => {
  const svc = await service();
  const list = "/api/users";
  const first = await tagOf(svc, list);
  assertEquals(await tagOf(svc, list), first, "stable while nothing changes");
  assertEquals(await conditional(svc, list, { "if-none-match": first }), {
    status: 304,
    etag: first,
    body: "",
  });
  // Any of a list of tags, and weak comparison, as RFC 9110 says.
  assertEquals(
    (await conditional(svc, list, {
      "if-none-match": `"other", W/${first}`,
    })).status,
    304,
  );

  const { account } = await svc.userClient("viewer");
  const created = await tagOf(svc, list);
  assertNotEquals(created, first);
  const stale = await conditional(svc, list, { "if-none-match": first });
  assertEquals(stale.status, 200);
  assertEquals(stale.etag, created);
  assertEquals(JSON.parse(stale.body).length, 2);

  await svc.admin.PATCH("/api/users/{id}", {
    params: { path: { id: account.id } },
    body: { role: "admin" },
  });
  const updated = await tagOf(svc, list);
  assertNotEquals(updated, created);

  await svc.admin.DELETE("/api/users/{id}", {
    params: { path: { id: account.id } },
  });
  const deleted = await tagOf(svc, list);
  assertNotEquals(deleted, updated);
  assertEquals(
    (await conditional(svc, list, { "if-none-match": deleted })).status,
    304,
  );

  // Another query is another answer, with a tag of its own.
  const paged = await tagOf(svc, "/api/users?limit=1");
  assertNotEquals(paged, deleted);
  assertEquals(
    (await conditional(svc, "/api/users?limit=1", {
      "if-none-match": deleted,
    })).status,
    200,
  );
  assertEquals(
    (await conditional(svc, "/api/users?limit=1", {
      "if-none-match": paged,
    })).status,
    304,
  );
});

Deno.test("one user's ETag answers 304 while the user is unchanged, and changes with a role change or a password reset", async () => {
  const svc = await service();
  const { account } = await svc.userClient("viewer");
  const path = `/api/users/${account.id}`;
  const tag = await tagOf(svc, path);
  assertEquals(await conditional(svc, path, { "if-none-match": tag }), {
    status: 304,
    etag: tag,
    body: "",
  });
  await svc.admin.PATCH("/api/users/{id}", {
    params: { path: { id: account.id } },
    body: { password: "another-password" },
  });
  const afterReset = await tagOf(svc, path);
  assertNotEquals(afterReset, tag);
  await svc.admin.PATCH("/api/users/{id}", {
    params: { path: { id: account.id } },
    body: { role: "admin" },
  });
  const afterRole = await tagOf(svc, path);
  assertNotEquals(afterRole, afterReset);
  const fresh = await conditional(svc, path, { "if-none-match": tag });
  assertEquals(fresh.status, 200);
  assertEquals(JSON.parse(fresh.body).role, "admin");
  // Another user's tag never validates this one.
  assertEquals(
    (await conditional(svc, `/api/users/${svc.adminAccount.id}`, {
      "if-none-match": afterRole,
    })).status,
    200,
  );
});

Deno.test("If-None-Match comes after 401, 403 and 404", async () => {
  const svc = await service();
  const tag = await tagOf(svc, "/api/users");
  const userTag = await tagOf(svc, `/api/users/${svc.adminAccount.id}`);
  const anonymous = await svc.fetch("/api/users", {
    headers: { "if-none-match": tag },
  });
  assertEquals([anonymous.status, await anonymous.json()], [401, {
    error: "Unauthorised",
  }]);
  const { client: viewer } = await svc.userClient("viewer");
  const forbidden = await viewer.GET("/api/users", {
    params: { header: { "if-none-match": "*" } },
  });
  assertEquals(forbidden.response.status, 403);
  assertEquals(forbidden.error, { error: "Forbidden" });
  const forbiddenOne = await viewer.GET("/api/users/{id}", {
    params: {
      path: { id: svc.adminAccount.id },
      header: { "if-none-match": userTag },
    },
  });
  assertEquals(forbiddenOne.response.status, 403);
  for (const id of ["999999", "abc"]) {
    const missing = await conditional(svc, `/api/users/${id}`, {
      "if-none-match": "*",
    });
    assertEquals([missing.status, JSON.parse(missing.body)], [404, {
      error: "User not found",
    }]);
  }
  // A bad query parameter is answered before the tag is looked at.
  assertEquals(
    (await conditional(svc, "/api/users?limit=0", { "if-none-match": "*" }))
      .status,
    400,
  );
});

Deno.test("PATCH and DELETE with If-Match write only the version they name: 412 Precondition failed otherwise, after 400 and 404", async () => {
  const svc = await service();
  const { account } = await svc.userClient("viewer");
  const id = account.id;
  const path = `/api/users/${id}`;
  const patch = (ifMatch: string, body: unknown = { role: "admin" }) =>
    svc.adminFetch(path, {
      method: "PATCH",
      headers: { "if-match": ifMatch },
      body: JSON.stringify(body),
    });
  const remove = (target: string, ifMatch: string) =>
    svc.adminFetch(target, {
      method: "DELETE",
      headers: { "if-match": ifMatch },
    });
  const answer = async (res: Response) => [res.status, await res.json()];

  const tag = await tagOf(svc, path);
  assertEquals(await answer(await patch(tag)), [200, {
    id,
    username: account.username,
    name: account.name,
    email: account.email,
    role: "admin",
  }]);
  // The same tag again: the user changed since.
  const precondition = [412, { error: "Precondition failed" }];
  assertEquals(
    await answer(await patch(tag, { role: "viewer" })),
    precondition,
  );
  assertEquals(
    (await svc.admin.GET("/api/users/{id}", {
      params: { path: { id } },
    })).data?.role,
    "admin",
    "the 412 wrote nothing",
  );
  const current = await tagOf(svc, path);
  // A weak tag never matches If-Match; garbage neither; a list with the current one does.
  assertEquals(await answer(await patch(`W/${current}`)), precondition);
  assertEquals(await answer(await patch("garbage")), precondition);
  assertEquals(await answer(await patch(`"u${id}.1"`)), precondition);
  // Digits past what a version can be (a 64-bit integer) name none either.
  assertEquals(
    await answer(await patch(`"u${id}.9999999999999999999"`)),
    precondition,
  );
  assertEquals(
    await answer(await remove(path, `"u${id}.9223372036854775808"`)),
    precondition,
  );
  assertEquals(
    (await patch(`"nope", ${current}`, { role: "viewer" })).status,
    200,
  );
  assertEquals((await patch("*")).status, 200);
  // 400 and 404 come first.
  assertEquals(await answer(await patch(tag, { role: "king" })), [400, {
    error: "Invalid role",
  }]);
  const missing = await svc.adminFetch("/api/users/999999", {
    method: "PATCH",
    headers: { "if-match": tag },
    body: JSON.stringify({ role: "admin" }),
  });
  assertEquals(await answer(missing), [404, { error: "User not found" }]);

  // DELETE alike; its own 400 (self) first.
  const self = `/api/users/${svc.adminAccount.id}`;
  assertEquals(await answer(await remove(self, '"stale"')), [400, {
    error: "You cannot delete your own account",
  }]);
  assertEquals(
    await answer(await remove("/api/users/999999", '"stale"')),
    [404, { error: "User not found" }],
  );
  assertEquals(await answer(await remove(path, tag)), precondition);
  assert(
    (await svc.admin.GET("/api/users/{id}", { params: { path: { id } } }))
      .data,
    "the 412 deleted nothing",
  );
  assertEquals(await answer(await remove(path, await tagOf(svc, path))), [
    200,
    { ok: true },
  ]);
});

Deno.test("a malformed If-None-Match counts as absent: 200 with the body, never 304", async () => {
  const svc = await service();
  for (const path of ["/api/users", `/api/users/${svc.adminAccount.id}`]) {
    const tag = await tagOf(svc, path);
    assertEquals(
      (await conditional(svc, path, { "if-none-match": tag }))
        .status,
      304,
      "the well-formed tag matches",
    );
    for (
      const header of [
        `garbage${tag}`,
        `${tag}garbage`,
        `${tag} ${tag}`,
        `w/${tag}`,
        `W/ ${tag}`,
        `"other", garbage${tag}`,
        tag.slice(0, -1),
        `*, ${tag}`,
      ]
    ) {
      const answer = await conditional(svc, path, { "if-none-match": header });
      assertEquals(answer.status, 200, `${path} If-None-Match: ${header}`);
      assertEquals(answer.etag, tag);
      assert(answer.body.length > 0);
    }
    // Lists as RFC 9110 writes them still match: spaces, empty elements.
    for (const header of [` ${tag} `, `"x" ,, W/${tag},`, `,${tag}`]) {
      assertEquals(
        (await conditional(svc, path, { "if-none-match": header })).status,
        304,
        header,
      );
    }
  }
});

Deno.test("If-Match compares versions exactly: a leading zero or a malformed header answers 412 and writes nothing", async () => {
  const svc = await service();
  const { account } = await svc.userClient("viewer");
  const path = `/api/users/${account.id}`;
  const tag = await tagOf(svc, path);
  const [, version] = /^"u[0-9]+\.([0-9]+)"$/.exec(tag)!;
  for (
    const header of [
      `"u${account.id}.0${version}"`,
      `"u0${account.id}.${version}"`,
      `"u${account.id}.${version}.0"`,
      `garbage${tag}`,
      `${tag} ${tag}`,
      `*, ${tag}`,
      `${tag}x`,
    ]
  ) {
    for (const method of ["PATCH", "DELETE"]) {
      const res = await svc.adminFetch(path, {
        method,
        headers: { "if-match": header },
        body: method === "PATCH"
          ? JSON.stringify({ role: "admin" })
          : undefined,
      });
      assertEquals(
        [res.status, await res.json()],
        [412, { error: "Precondition failed" }],
        `${method} If-Match: ${header}`,
      );
    }
  }
  assertEquals(await tagOf(svc, path), tag, "nothing was written");
  assertEquals(
    (await svc.adminFetch(path, {
      method: "PATCH",
      headers: { "if-match": `"x", ${tag}` },
      body: JSON.stringify({ role: "admin" }),
    })).status,
    200,
  );
});

Deno.test("of two PATCHes sent at once with the same If-Match, one succeeds and the other answers 412", async () => {
  const svc = await service();
  const { account } = await svc.userClient("viewer");
  const path = `/api/users/${account.id}`;
  for (let round = 0; round < 10; round++) {
    const tag = await tagOf(svc, path);
    const role = round % 2 ? "viewer" : "admin";
    // Both set the same role: only the version tells them apart.
    const answers = await Promise.all([0, 1].map(async () => {
      const res = await svc.adminFetch(path, {
        method: "PATCH",
        headers: { "if-match": tag },
        body: JSON.stringify({ role }),
      });
      return [res.status, await res.json()] as const;
    }));
    const statuses = answers.map((a) => a[0]).sort();
    assertEquals(statuses, [200, 412], `round ${round}`);
    assertEquals(answers.find((a) => a[0] === 412)![1], {
      error: "Precondition failed",
    });
  }
});

Deno.test("the typed client's ETag cache sends If-None-Match and answers a 304 with the data it has", async () => {
  const svc = await service();
  const statuses: number[] = [];
  const api = createUserAdminClient({
    baseUrl: svc.baseUrl,
    etagCache: true,
    fetch: async (request) => {
      const res = await fetch(request);
      statuses.push(res.status);
      return res;
    },
  });
  assert((await api.login("admin", "admin-pass-1234")).ok);
  statuses.length = 0;
  const first = await api.get("/api/users");
  const second = await api.get("/api/users");
  assert(first.ok && second.ok);
  assertEquals(second.data, first.data);
  assertEquals(statuses, [200, 304]);
  await svc.userClient("viewer");
  const third = await api.get("/api/users");
  assert(third.ok);
  assertEquals(third.data.length, 2);
  const one = await api.get("/api/users/{id}", {
    params: { path: { id: svc.adminAccount.id } },
  });
  const oneAgain = await api.get("/api/users/{id}", {
    params: { path: { id: svc.adminAccount.id } },
  });
  assert(one.ok && oneAgain.ok);
  assertEquals(oneAgain.data, one.data);
  assertEquals(statuses, [200, 304, 200, 200, 304]);
});

Deno.test("the list's ETag stays across a login and a password reset, and changes with a disable", async () => {
  const svc = await service();
  const list = "/api/users";
  const { account, password } = await svc.userClient("viewer");
  const before = await tagOf(svc, list);
  const login = await svc.client().login(account.username, password);
  assert(login.ok, "the user logs in");
  const reset = await svc.admin.PATCH("/api/users/{id}", {
    params: { path: { id: account.id } },
    body: { password: "another-password-1" },
  });
  assertEquals(reset.response.status, 200, "the reset");
  assertEquals(
    (await conditional(svc, list, { "if-none-match": before })).status,
    304,
    "nothing the list shows changed",
  );
  const detail = await svc.admin.GET("/api/users/{id}", {
    params: { path: { id: account.id } },
  });
  assert(detail.data?.lastLoginAt, "the login is on the user's detail");
  const disabled = await svc.admin.POST("/api/users/{id}/disable", {
    params: { path: { id: account.id } },
  });
  assertEquals(disabled.response.status, 200, "the disable");
  assertNotEquals(await tagOf(svc, list), before, "a disable changes it");
});
