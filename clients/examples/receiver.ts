/**
 * A webhook receiver: verifies each delivery's signature with the
 * `standardwebhooks` library and the endpoint's secret (the `secret` that
 * `POST /api/webhooks` answered once), and hands each message on once.
 * Delivery is at least once, so a message may come again: it is recognised
 * by its `webhook-id`. Tested by tests/webhooks_test.ts.
 *
 *   WEBHOOK_SECRET=whsec_... deno run --allow-net --allow-env clients/examples/receiver.ts
 */
// deno-lint-ignore no-import-prefix
import { Webhook } from "npm:standardwebhooks@1.1.1";
import type { WebhookMessage } from "../mod.ts";

export function receiver(
  secret: string,
  onMessage: (message: WebhookMessage) => void | Promise<void>,
): (req: Request) => Promise<Response> {
  const webhook = new Webhook(secret);
  // Keep these where your own changes are kept (the same transaction) to
  // survive restarts; in memory here.
  const seen = new Set<string>();
  return async (req) => {
    const body = await req.text();
    let message: WebhookMessage;
    try {
      // Checks the signature and that the timestamp is within 5 minutes.
      message = webhook.verify(
        body,
        Object.fromEntries(req.headers),
      ) as WebhookMessage;
    } catch {
      return new Response("invalid signature", { status: 401 });
    }
    const id = req.headers.get("webhook-id")!;
    if (!seen.has(id)) {
      // Throwing here answers 500: the service sends it again later.
      await onMessage(message);
      seen.add(id);
    }
    return new Response(null, { status: 204 });
  };
}

if (import.meta.main) {
  const secret = Deno.env.get("WEBHOOK_SECRET");
  if (!secret) throw new Error("set WEBHOOK_SECRET to the webhook's secret");
  Deno.serve(
    { port: 9000 },
    receiver(secret, (m) => console.log(m.type, m.data.id, m.data.target)),
  );
}
