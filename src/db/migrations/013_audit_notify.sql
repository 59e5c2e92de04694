-- Tells listeners when records were sealed into the chain: a notification
-- on `audit_sealed` (payload: the chain's new head id) once the transaction
-- that moved the head commits. The change feed (GET /api/audit/stream)
-- listens on it on every instance; every seal notifies, whoever runs it
-- (any instance, the recovery task, a previous release's audit_append).
-- Only new objects: nothing an earlier release uses changes.
create function audit_notify_sealed() returns trigger
language plpgsql as $$
begin
  perform pg_notify('audit_sealed', new.head_id::text);
  return null;
end $$;

-- The retention sweep moves only the anchor: no notification for it.
create trigger audit_sealed after update on audit_chain
for each row when (new.head_id is distinct from old.head_id)
execute function audit_notify_sealed();
