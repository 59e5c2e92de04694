-- An audit record appended in one statement: the chain's row locked and
-- moved, the record's time taken, its hash computed and the record inserted,
-- all in the database. A write then pays one round trip for its record, not
-- two (read the head, then insert), inside the section its row locks
-- already serialise.
--
-- `tail` is the record's canonical content after its id and time, as
-- src/audit/chain.ts (canonicalTail) writes it; this function puts the id and
-- the time in front, the way canonicalContent does, and hashes the result
-- with the previous hash as chainHash does, so verification (in TypeScript)
-- recomputes the same bytes. The database must be UTF8, as convert_to
-- assumes for the hashed text.
create function audit_append(
  action text,
  actor_id integer,
  actor_username text,
  target_id integer,
  target_username text,
  details jsonb,
  request_id text,
  client_address text,
  tail text
) returns bigint
language plpgsql as $$
declare
  new_id bigint;
  prev bytea;
  at text;
  digest bytea;
begin
  -- Locks the chain's row until the caller's transaction ends: appends on
  -- every instance take turns, each after the head its predecessor committed.
  update audit_chain set head_id = head_id + 1
  returning head_id, head_hash into new_id, prev;
  at := to_char(clock_timestamp() at time zone 'UTC',
    'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
  digest := sha256(prev || convert_to(
    '[' || new_id::text || ',"' || at || '",' || tail, 'UTF8'));
  insert into audit_events (id, time, action, actor_id, actor_username,
    target_id, target_username, details, request_id, client_address,
    prev_hash, hash)
  values (new_id, at::timestamptz, action, actor_id, actor_username,
    target_id, target_username, details, request_id, client_address,
    prev, digest);
  update audit_chain set head_hash = digest;
  return new_id;
end $$;
