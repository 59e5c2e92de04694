-- Every record says which door it came through (`via`: api, scim, import;
-- null for the service itself): the twelfth element of its canonical
-- content (src/audit/chain.ts), present only when not null, the key id
-- then null in eleventh place when there is none. Every record without it
-- (every record before this, every record of the service, every tail an
-- older release's instance writes during a rolling upgrade) hashes as
-- before. No check on its values: a seal must never fail on a record's
-- content, or no record after it would enter the chain.
alter table audit_events add column if not exists via text;

-- audit_seal: moves committed records from audit_pending into the hash chain
-- (audit_events), in their commit order, each hashed over the previous
-- record's hash and its own canonical content. This is its live body,
-- replacing 023's; a change to it is a new migration that replaces this one.
-- What changed: the twelfth element of the text is stored as `via` (null
-- for a tail without it). Instances of an older release call this body
-- too once it is here: the seal is the database's, not theirs.
create or replace function audit_seal(batch integer) returns integer
language plpgsql set enable_seqscan = off set jit = off as $$
declare
  head audit_chain;
  pending record;
  sealed integer := 0;
  taken tid[] := '{}';
  canonicals text[] := '{}';
  prevs bytea[] := '{}';
  digests bytea[] := '{}';
  canonical text;
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
    canonical := '[' || head.head_id::text || ',"'
      || to_char(pending.time at time zone 'UTC',
        'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
      || '",' || pending.tail;
    digest := sha256(head.head_hash || convert_to(canonical, 'UTF8'));
    sealed := sealed + 1;
    taken[sealed] := pending.ctid;
    canonicals[sealed] := canonical;
    prevs[sealed] := head.head_hash;
    digests[sealed] := digest;
    head.head_hash := digest;
  end loop;
  if sealed > 0 then
    -- Each text parsed once (offset 0 keeps the subquery from being
    -- folded into the select list, which would parse it per column).
    insert into audit_events (id, time, action, actor_id, actor_username,
      target_id, target_username, details, request_id, client_address,
      actor_key_id, via, prev_hash, hash)
    select (c->>0)::bigint, (c->>1)::timestamptz, c->>2, (c->>3)::integer,
      c->>4, (c->>5)::integer, c->>6, c->7, c->>8, c->>9,
      (c->>10)::integer, c->>11, p, h
    from (select t::jsonb as c, p, h
      from unnest(canonicals, prevs, digests) as r(t, p, h) offset 0) s;
    delete from audit_pending where ctid = any(taken);
    update audit_chain set head_id = head.head_id, head_hash = head.head_hash
    where singleton;
  end if;
  return sealed;
end $$;
