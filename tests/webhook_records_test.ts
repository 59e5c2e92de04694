/**
 * What the audit trail keeps of a webhook's URL: its origin and path, never
 * its query, fragment or user info (a receiver's token often rides there,
 * and every admin, the change feed and other webhooks read the trail). A
 * URL with user info is refused at creation.
 */
import { auditEvents } from "../src/audit/events.ts";
import { assertEquals } from "./support/assert.ts";
import { sharedService, type TestService } from "./support/service.ts";

// bcrypt's work is not this file's subject: its cheapest cost.
const service = sharedService({ WEBHOOK_ALLOW_PRIVATE: "true" }, {
  bcryptCost: 4,
});

const TOKENED = "http://127.0.0.1:9/hooks/users?token=s3cret&x=1#frag";
const RECORDED = "http://127.0.0.1:9/hooks/users";

/** The newest record of the action, as GET /api/audit answers it. */
async function newest(svc: TestService, action: "webhook.created") {
  const trail = await svc.admin.GET("/api/audit", {
    params: { query: { action, limit: 1 } },
  });
  return trail.data![0];
}

Deno.test("webhook.created, .enabled and .deleted keep the URL's origin and path, without its query or fragment", async () => {
  const svc = await service();
  const created = await svc.admin.POST("/api/webhooks", {
    body: { url: TOKENED },
  });
  assertEquals(created.response.status, 201);
  const id = created.data!.id;
  // The endpoint itself keeps its query: deliveries go there.
  assertEquals(
    created.data!.url,
    "http://127.0.0.1:9/hooks/users?token=s3cret&x=1",
  );

  // Disabled as the worker disables it; its lease taken too, so that an
  // attempt failing meanwhile (nothing listens on port 9) does not write
  // the endpoint back as it was.
  await svc.sql`
    update webhook_endpoints set disabled_at = now(), lease_until = null,
      lease_token = null
    where id = ${id}`;
  const enabled = await svc.admin.POST("/api/webhooks/{id}/enable", {
    params: { path: { id } },
  });
  assertEquals(enabled.response.status, 200);
  const deleted = await svc.admin.DELETE("/api/webhooks/{id}", {
    params: { path: { id } },
  });
  assertEquals(deleted.response.status, 200);

  const trail = await svc.admin.GET("/api/audit", {
    params: { query: { limit: 10 } },
  });
  const details = Object.fromEntries(
    trail.data!.filter((r) => r.action.startsWith("webhook."))
      .map((r) => [r.action, r.details]),
  );
  assertEquals(details, {
    "webhook.created": { webhookId: id, url: RECORDED },
    "webhook.enabled": { webhookId: id, url: RECORDED },
    "webhook.deleted": { webhookId: id, url: RECORDED },
  });
  const text = JSON.stringify(trail.data);
  assertEquals(text.includes("s3cret") || text.includes("frag"), false);
});

Deno.test("webhook.disabled keeps the URL's origin and path, without its query", () => {
  const record = auditEvents.webhookDisabled({ id: 4, url: TOKENED }, 17);
  assertEquals(record.details, {
    webhookId: 4,
    url: RECORDED,
    heldRecordId: 17,
  });
});

Deno.test("a webhook URL with user info, even an empty one, answers 400 Invalid webhook and nothing is recorded", async () => {
  const svc = await service();
  const before = await newest(svc, "webhook.created");
  for (
    const url of [
      "http://user:pass@127.0.0.1:9/x",
      "http://user@127.0.0.1:9/x",
      "http://:pass@127.0.0.1:9/x",
      "http://@127.0.0.1:9/x",
      "HTTP://u%40v@127.0.0.1:9/x",
    ]
  ) {
    const answer = await svc.admin.POST("/api/webhooks", { body: { url } });
    assertEquals(answer.response.status, 400, url);
    assertEquals(answer.error, { error: "Invalid webhook" });
  }
  assertEquals(await newest(svc, "webhook.created"), before);
  // An `@` after the authority is no user info.
  const fine = await svc.admin.POST("/api/webhooks", {
    body: { url: "http://127.0.0.1:9/to/a@b?c=@" },
  });
  assertEquals(fine.response.status, 201);
});
