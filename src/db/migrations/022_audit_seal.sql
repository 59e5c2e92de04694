-- audit_seal: moves committed records from audit_pending into the hash chain
-- (audit_events), in their commit order, each hashed over the previous
-- record's hash and its own canonical content (src/audit/chain.ts). This is
-- its live body; a change to it is a new migration that replaces this one.
-- 008 made it and 015 added the record's key id (the eleventh element of the
-- canonical content, null for every tail without it, which includes every
-- tail an older release writes); the body is unchanged here.
create or replace function audit_seal(batch integer) returns integer
language plpgsql set enable_seqscan = off set jit = off as $$
declare
  head audit_chain;
  pending record;
  sealed integer := 0;
  taken tid[] := '{}';
  stamp text;
  canonical text;
  content jsonb;
  digest bytea;
begin
  perform from audit_pending limit 1;
  if not found then
    return 0;
  end if;
  select * into strict head from audit_chain where singleton for update;
  for pending in
    select ctid, time, tail from audit_pending order by seq limit batch
  loop
    head.head_id := head.head_id + 1;
    stamp := to_char(pending.time at time zone 'UTC',
      'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
    canonical := '[' || head.head_id::text || ',"' || stamp || '",'
      || pending.tail;
    digest := sha256(head.head_hash || convert_to(canonical, 'UTF8'));
    content := canonical::jsonb;
    insert into audit_events (id, time, action, actor_id, actor_username,
      target_id, target_username, details, request_id, client_address,
      actor_key_id, prev_hash, hash)
    values (head.head_id, stamp::timestamptz, content->>2,
      (content->>3)::integer, content->>4, (content->>5)::integer,
      content->>6, content->7, content->>8, content->>9,
      (content->>10)::integer, head.head_hash, digest);
    head.head_hash := digest;
    sealed := sealed + 1;
    taken[sealed] := pending.ctid;
  end loop;
  if sealed > 0 then
    delete from audit_pending where ctid = any(taken);
    update audit_chain set head_id = head.head_id, head_hash = head.head_hash
    where singleton;
  end if;
  return sealed;
end $$;
