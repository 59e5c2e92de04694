/**
 * Webhook workers wake on every process's seals (PostgreSQL only: the
 * embedded database belongs to one process). Two instances share one
 * database and poll only once a minute; records are sealed by a third
 * process (the test's own connection, as another instance or the recovery
 * task would), so only the `audit_sealed` notification can bring them to a
 * worker quickly. Each instance in turn is the only one able to deliver
 * (the other is frozen with SIGSTOP).
 */
import { auditEvents } from "../src/audit/events.ts";
import { createStore } from "../src/db/store.ts";
import { NO_DEADLINE } from "../src/db/write.ts";
import { assert, assertEquals } from "./support/assert.ts";
import { startCluster } from "./support/cluster.ts";
import { postgresOnly } from "./support/conditions.ts";
import { sleep } from "./support/process.ts";
import { eventually, startReceiver } from "./webhook_support.ts";

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

Deno.test({
  ...postgresOnly(
    "a record sealed by another process reaches each instance's worker within 300 ms (median), long before its next poll",
  ),
  async fn() {
    await using receiver = startReceiver();
    await using cluster = await startCluster(2, {
      env: {
        WEBHOOK_ALLOW_PRIVATE: "true",
        WEBHOOK_POLL_MS: "60000",
        LOG_LEVEL: "error",
      },
    });
    const [first, second] = cluster.instances;
    const cookie = await cluster.login(0);
    const res = await fetch(`${cluster.urls[0]}/api/webhooks`, {
      method: "POST",
      headers: { cookie },
      body: JSON.stringify({ url: receiver.url("/hook"), actions: ["logout"] }),
    });
    assertEquals(res.status, 201);
    const hook = await res.json();
    // Another process's writes: neither instance seals them or hears of
    // them but through PostgreSQL.
    const other = createStore(cluster.sql);
    const ctx = { requestId: null, clientAddress: null, via: null };
    let sent = 0;
    const latencies = async () => {
      const ms: number[] = [];
      for (let i = 0; i < 7; i++) {
        const started = performance.now();
        await other.audit.record(
          auditEvents.logout({ id: 1, username: "admin" }, ctx),
          NO_DEADLINE,
        );
        await other.audit.seal();
        sent++;
        const arrived = await eventually(
          `record ${sent} delivered`,
          () => receiver.received.length === sent && performance.now(),
          10_000,
        );
        ms.push(arrived - started);
      }
      return ms;
    };
    /** No lease held and a moment of quiet: a frozen instance holds nothing. */
    const idle = async () => {
      await eventually("the endpoint's lease given back", async () => {
        const [row] = await cluster.sql`
          select lease_until is null as free from webhook_endpoints
          where id = ${hook.id}`;
        return row.free;
      });
      await sleep(200);
    };
    try {
      await idle();
      second.kill("SIGSTOP");
      const firstMs = await latencies();
      await idle();
      second.kill("SIGCONT");
      first.kill("SIGSTOP");
      const secondMs = await latencies();
      first.kill("SIGCONT");
      console.log(
        `the first instance: ${firstMs.map(Math.round).join(", ")} ms; ` +
          `the second: ${secondMs.map(Math.round).join(", ")} ms`,
      );
      for (
        const [which, ms] of Object.entries({
          first: firstMs,
          second: secondMs,
        })
      ) {
        const m = Math.round(median(ms));
        assert(m < 300, `the ${which} instance's median: ${m} ms`);
      }
      assertEquals(
        receiver.verified("/hook", hook.secret).map((m) => m.type),
        Array(sent).fill("logout"),
      );
    } finally {
      first.kill("SIGCONT");
      second.kill("SIGCONT");
      await other.stop();
    }
  },
});
