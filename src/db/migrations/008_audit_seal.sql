-- Records are sealed into the chain after their write commits, in batches,
-- instead of inside the write.
--
-- Why: every users write takes the users_version row and holds it to its
-- commit, so writes take turns, and a record appended in the write (006)
-- made that turn longer by the whole append: the chain's row, the hash, five
-- index entries. Here a write only adds its record to
-- audit_pending, one heap row without an index or a lock on anything shared;
-- `audit_seal` moves what is pending into the chain, under the chain's lock,
-- in one transaction for however many records wait.
--
-- What stays: the record commits or rolls back with its change (it is in
-- the write's transaction); ids are assigned under the chain's lock in chain
-- order, so they still increase without gaps and a missing id is a removed
-- record; verification and the chain's columns do not change. What is new:
-- between its commit and its seal (milliseconds; the writer seals before it
-- answers) a record is not yet in the chain. A seal that fails after the
-- commit leaves it pending; the next seal, from any write or from the
-- housekeeping sweep, takes it.
-- No index: a writer adds no index entry, and a seal reads the few rows
-- pending (and removes them by their ctid).
create table audit_pending (
  -- The writers' order, as far as their inserts show it: the chain's order.
  seq bigint generated always as identity,
  -- When the change was written, not when it was sealed.
  time timestamptz not null default clock_timestamp(),
  -- As audit_append took it: the canonical content after the id and time
  -- (src/audit/chain.ts, canonicalTail).
  tail text not null
);

-- Seals up to `batch` of the records pending when its lock is granted, in
-- their order, and returns how many. Locks the chain's row until the caller's transaction
-- ends, so seals on every instance take turns; after the wait, READ
-- COMMITTED sees the rows the previous seal left (none of those it sealed).
-- Each record's canonical text is its id, its time and its tail, hashed
-- after the previous hash, as src/audit/chain.ts computes it; the columns
-- are stored from that same text. convert_to assumes a UTF8 database.
--
-- The chain's row by its key, as in 007 (`enable_seqscan = off`); the
-- pending rows by a scan, the only way there is, which that setting prices
-- so high that PostgreSQL would compile it (JIT) on every call, which costs
-- far more than the scan: hence `jit = off`.
create function audit_seal(batch integer) returns integer
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
  -- Nothing pending: no lock taken, nothing written (a read of the trail
  -- seals first).
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
      prev_hash, hash)
    values (head.head_id, stamp::timestamptz, content->>2,
      (content->>3)::integer, content->>4, (content->>5)::integer,
      content->>6, content->7, content->>8, content->>9, head.head_hash,
      digest);
    head.head_hash := digest;
    sealed := sealed + 1;
    taken[sealed] := pending.ctid;
  end loop;
  if sealed > 0 then
    -- Exactly the rows sealed: one committed since this function's read
    -- (a writer slower to commit) waits for the next seal.
    delete from audit_pending where ctid = any(taken);
    update audit_chain set head_id = head.head_id, head_hash = head.head_hash
    where singleton;
  end if;
  return sealed;
end $$;

-- Whatever 006's append left is sealed already; nothing appends that way now.
drop function audit_append(text);
