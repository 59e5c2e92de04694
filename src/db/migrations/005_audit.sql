-- The audit trail: one hash chain of records, appended in the transaction of
-- the change each one records.
--
-- Ids come from the chain's head row below, not from a sequence: a record's
-- id is the previous one's plus one, assigned while the head row is locked,
-- so ids follow the chain's order without gaps (a rolled-back write rolls its
-- id back too) and a missing id is a removed record.
create table audit_events (
  id bigint primary key,
  time timestamptz not null,
  action text not null,
  actor_id integer,
  actor_username text,
  target_id integer,
  target_username text,
  details jsonb not null default '{}',
  request_id text,
  client_address text,
  -- SHA-256 of the previous record (the anchor for the oldest kept one).
  prev_hash bytea not null,
  -- SHA-256 over prev_hash and this record's canonical content (src/audit/chain.ts).
  hash bytea not null
);
-- Newest first is the primary key read backwards; each filter pages by id.
create index audit_events_action_id on audit_events (action, id);
create index audit_events_actor_id on audit_events (actor_id, id);
create index audit_events_target_id on audit_events (target_id, id);
create index audit_events_time on audit_events (time);

-- The chain's one row. Appends lock it (serialising writers on every
-- instance) and move the head; the retention sweep moves the anchor: the
-- id and hash of the last record it removed, which the oldest kept record
-- must follow. Verification checks both ends against it, so removing the
-- oldest or the newest records is detected too.
create table audit_chain (
  singleton boolean primary key default true check (singleton),
  head_id bigint not null,
  head_hash bytea not null,
  anchor_id bigint not null,
  anchor_hash bytea not null
);
insert into audit_chain (head_id, head_hash, anchor_id, anchor_hash)
values (0, decode(repeat('00', 32), 'hex'), 0, decode(repeat('00', 32), 'hex'));
