-- Webhook test events (POST /api/webhooks/{id}/test): an attempt row with
-- no record, `pending` until the endpoint's worker has sent it once, then
-- `delivered` or `failed` like any attempt. A test is never retried and
-- moves no cursor. Expand-only for the queue: a release without this never
-- claims for a pending row, and the row is kept as an attempt.
alter table webhook_attempts alter column record_id drop not null;

-- What a claim looks for beside due records: an endpoint's waiting test.
create index webhook_attempts_pending on webhook_attempts (endpoint_id)
  where outcome = 'pending';
