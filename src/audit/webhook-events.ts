import type { AuditParty } from "./chain.ts";
import { type AuditContext, event, NO_REQUEST } from "./audit-event.ts";

/** What a webhook's records keep of the endpoint. */
export interface WebhookRef {
  id: number;
  url: string;
}

const webhookDetails = (w: WebhookRef) => ({
  webhookId: w.id,
  url: recordedUrl(w.url),
});

/**
 * A webhook URL as records keep it: its origin and path only. A query or
 * fragment may carry the receiver's token, and records are read by every
 * admin, the change feed and other webhooks.
 */
export function recordedUrl(url: string): string {
  const parsed = URL.parse(url);
  return parsed ? parsed.origin + parsed.pathname : "";
}

/** Webhook writes: the endpoint's id and URL's origin and path (never its secret). */
export const webhookEvents = {
  webhookCreated: (
    actor: AuditParty,
    webhook: WebhookRef,
    context: AuditContext,
  ) => event("webhook.created", actor, null, webhookDetails(webhook), context),

  webhookDeleted: (
    actor: AuditParty,
    webhook: WebhookRef,
    context: AuditContext,
  ) => event("webhook.deleted", actor, null, webhookDetails(webhook), context),

  webhookEnabled: (
    actor: AuditParty,
    webhook: WebhookRef,
    context: AuditContext,
  ) => event("webhook.enabled", actor, null, webhookDetails(webhook), context),

  /** The service gave up on an endpoint: its retry budget ran out. */
  webhookDisabled: (webhook: WebhookRef, recordId: number) =>
    event("webhook.disabled", null, null, {
      ...webhookDetails(webhook),
      heldRecordId: recordId,
    }, NO_REQUEST),
};
