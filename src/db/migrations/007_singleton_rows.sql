-- The functions that update the two one-row tables every write takes turns
-- on, users_version (each statement that writes users) and audit_chain (each
-- audit record), find the row by its primary key from here on, never by a
-- scan.
--
-- Why: under a sustained write rate each update leaves a dead version of the
-- row behind, and while concurrent transactions still see them they cannot
-- be pruned, so the one-row table grows by pages within seconds. A
-- sequential scan then reads every page, in the section where writes take
-- turns; a lookup by the key reads one.
--
-- Both functions forbid the scan (`set enable_seqscan = off`): the plan is
-- made once per connection, and the planner rightly prefers a scan of a
-- one-page table, which it would then keep while the table grew. The bodies
-- are 004's and 006's with `where singleton` added; nothing else changes.
create or replace function users_list_version() returns trigger
language plpgsql set enable_seqscan = off as $$
begin
  update users_version set version = clock_version(version) where singleton;
  return null;
end $$;

create or replace function audit_append(tail text) returns bigint
language plpgsql set enable_seqscan = off as $$
declare
  head audit_chain;
  new_id bigint;
  stamp text;
  canonical text;
  content jsonb;
  digest bytea;
begin
  -- Locks the chain's row until the caller's transaction ends: appends on
  -- every instance take turns. After the wait, READ COMMITTED reads the row
  -- as the predecessor committed it; REPEATABLE READ fails to serialise
  -- instead of forking the chain.
  select * into strict head from audit_chain where singleton for update;
  new_id := head.head_id + 1;
  stamp := to_char(clock_timestamp() at time zone 'UTC',
    'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
  canonical := '[' || new_id::text || ',"' || stamp || '",' || tail;
  digest := sha256(head.head_hash || convert_to(canonical, 'UTF8'));
  content := canonical::jsonb;
  insert into audit_events (id, time, action, actor_id, actor_username,
    target_id, target_username, details, request_id, client_address,
    prev_hash, hash)
  values (new_id, stamp::timestamptz, content->>2, (content->>3)::integer,
    content->>4, (content->>5)::integer, content->>6, content->7,
    content->>8, content->>9, head.head_hash, digest);
  update audit_chain set head_id = new_id, head_hash = digest where singleton;
  return new_id;
end $$;
