/**
 * A consumer of the client that swagger-typescript-api generates from
 * openapi/openapi.yaml (./client/api.ts beside it), compiled with
 * `tsc --strict` by tests/generators_test.ts: what a service that resumes
 * the change feed and makes keys writes.
 */
import { Api, type AuditRecord, type CreateApiKey } from "./client/api";

const api = new Api({ baseUrl: "http://127.0.0.1:8000" });

/** Resumes the feed after the id an EventSource last saw (a string). */
export const resume = (seen: MessageEvent) =>
  api.api.streamAuditEvents({}, {
    headers: { "Last-Event-ID": seen.lastEventId },
  });

/** A key that never expires: `expiresAt: null`, as the document says. */
export const forever: CreateApiKey = { name: "billing-service", expiresAt: null };

export const createKey = (userId: number) => api.api.createApiKey(userId, forever);

export const actions = async (): Promise<string[]> => {
  const page = await api.api.listAuditEvents({ limit: 10 });
  return page.data.map((r: AuditRecord) => r.action);
};
