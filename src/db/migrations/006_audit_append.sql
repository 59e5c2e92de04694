-- An audit record appended in one statement, one round trip: the chain's row
-- locked, the record's id and time assigned, its hash computed, the record
-- inserted and the head moved, all in the database. A write pays one round
-- trip for its record (not two: read the head, then insert) inside the
-- section its row locks already serialise, and the chain's row is written
-- once per record (not twice).
--
-- `tail` is the record's canonical content after its id and time, as
-- src/audit/chain.ts (canonicalTail) writes it. Put behind the id and the
-- time the way canonicalContent does, it is the exact text hashed (after the
-- previous hash, as chainHash does) and the one source of the stored
-- columns, so a record's columns and its hash cannot disagree, and
-- verification in TypeScript recomputes the same bytes. convert_to assumes a
-- UTF8 database for the hashed text.
create function audit_append(tail text) returns bigint
language plpgsql as $$
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
  select * into strict head from audit_chain for update;
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
  update audit_chain set head_id = new_id, head_hash = digest;
  return new_id;
end $$;
