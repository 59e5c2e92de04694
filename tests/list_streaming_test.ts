import { jsonArrayBody } from "../src/http/json-array.ts";
import { assert, assertEquals } from "./support/assert.ts";
import { startService } from "./support/service.ts";
import { seedUsers } from "./support/users.ts";

const TRICKY_NAMES = [
  'quote " and backslash \\',
  "line\nbreak\ttab\r\u0001\u001f\u007f",
  "émoji 🙂 and \u2028 separator",
  "</script>",
];

Deno.test("the streamed user list is byte for byte the JSON array of the users, whatever their fields hold", async () => {
  await using svc = await startService();
  for (const [i, name] of TRICKY_NAMES.entries()) {
    const created = await svc.admin.POST("/api/users", {
      body: {
        username: `tricky${i}`,
        name,
        email: `tricky${i}@example.com`,
        password: "password-123",
        role: "viewer",
      },
    });
    assertEquals(created.response.status, 201);
  }
  const one = async (id: number) =>
    (await svc.admin.GET("/api/users/{id}", {
      params: { path: { id } },
    })).data!;
  const { data: text, response } = await svc.admin.GET("/api/users", {
    parseAs: "text",
  });
  assertEquals(response.status, 200);
  assertEquals(response.headers.get("content-type"), "application/json");
  const ids = (JSON.parse(text!) as { id: number }[]).map((u) => u.id);
  assertEquals(ids.length, 1 + TRICKY_NAMES.length);
  const expected = await Promise.all(ids.map(one));
  assertEquals(text, JSON.stringify(expected));
  assertEquals(expected.slice(1).map((u) => u.name), TRICKY_NAMES);
});

Deno.test("a list longer than one cursor batch arrives whole, oldest first", async () => {
  await using svc = await startService();
  await seedUsers(svc.sql, 4500);
  const { data, response } = await svc.admin.GET("/api/users");
  assertEquals(response.status, 200);
  assertEquals(data!.length, 4501);
  assertEquals(data![1].username, "bulk1");
  assertEquals(data![4500].username, "bulk4500");
  const order = data!.map((u) => [u.createdAt, u.id] as const);
  assert(order.every((o, i) =>
    i === 0 || order[i - 1][0] < o[0] ||
    (order[i - 1][0] === o[0] && order[i - 1][1] < o[1])
  ));
});

Deno.test("a list that fails before its first byte answers 500 Failed to list users", async () => {
  await using svc = await startService();
  // The session check still works; only the list's own query fails.
  await svc.sql`alter table users rename column created_at to created`;
  const { error, response } = await svc.admin.GET("/api/users");
  assertEquals(response.status, 500);
  assertEquals(error, { error: "Failed to list users" });
  assert(svc.logs.some((l) => l.msg === "request failed"));
});

Deno.test("a JSON array body that fails once streaming ends the body with an error and reports it", async () => {
  const reported: unknown[] = [];
  async function* batches() {
    yield ['{"a":1}', '{"a":2}'];
    yield ['{"a":3}'];
    throw new Error("connection lost");
  }
  const body = await jsonArrayBody(batches(), (e) => reported.push(e));
  assert(body instanceof ReadableStream);
  const reader = body.getReader();
  const first = await reader.read();
  assertEquals(
    new TextDecoder().decode(first.value),
    '[{"a":1},{"a":2},{"a":3}',
  );
  let failed = false;
  try {
    await reader.read();
  } catch {
    failed = true;
  }
  assert(failed, "the body must not end as if it were complete");
  assertEquals((reported[0] as Error).message, "connection lost");
});

Deno.test("a JSON array body joins batches with commas, skips empty ones, answers a short list in one piece and closes its source when cancelled", async () => {
  async function* batches() {
    yield [];
    yield ["1"];
    yield [];
    yield ["2", "3"];
    yield [];
  }
  const whole = await new Response(
    await jsonArrayBody(batches(), () => {}),
  ).text();
  assertEquals(whole, "[1,2,3]");
  assertEquals(await jsonArrayBody(empty(), () => {}), "[]");
  async function* oneBatch() {
    yield ["1", "2"];
  }
  assertEquals(await jsonArrayBody(oneBatch(), () => {}), "[1,2]");

  let closed = false;
  async function* endless() {
    try {
      for (let i = 0; i < 1000; i++) yield [String(i)];
    } finally {
      closed = true;
    }
  }
  const stream = await jsonArrayBody(endless(), () => {});
  assert(stream instanceof ReadableStream);
  const reader = stream.getReader();
  await reader.read();
  await reader.cancel();
  assert(closed, "cancelling the body closes the source");
});

async function* empty(): AsyncGenerator<string[]> {}
