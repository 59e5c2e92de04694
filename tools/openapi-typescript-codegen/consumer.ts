/**
 * A consumer of the client that openapi-typescript-codegen generates from
 * openapi/openapi.yaml (./client beside it), compiled with `tsc --strict`
 * by tests/generators_test.ts: what a service that resumes the change
 * feed and makes keys writes.
 */
import {
  type AuditRecord,
  AuditService,
  type CreateApiKey,
  KeysService,
  OpenAPI,
} from "./client";

OpenAPI.BASE = "http://127.0.0.1:8000";

/** Resumes the feed after the id an EventSource last saw (a string). */
export const resume = (seen: MessageEvent) =>
  AuditService.streamAuditEvents(undefined, undefined, seen.lastEventId);

/** A key that never expires: `expiresAt: null`, as the document says. */
export const forever: CreateApiKey = { name: "billing-service", expiresAt: null };

export const createKey = (userId: number) =>
  KeysService.createApiKey(userId, forever);

export const actions = async (): Promise<string[]> => {
  const page = await AuditService.listAuditEvents(10);
  return page.map((r: AuditRecord) => r.action);
};
