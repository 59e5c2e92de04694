-- audit_append(tail), the append of the releases before audit_seal (008),
-- kept for them: in a rolling upgrade such a release serves beside this one
-- on the same database, and each of its writes that records something (each
-- login among them) calls it in its transaction; without it those writes
-- fail and the older instances answer 500 until they stop. A later release,
-- which no release without audit_seal runs beside, may drop it.
--
-- It adds the record the way this release's writers do (to audit_pending,
-- stamped with its time there) and seals in the same transaction, so the
-- caller finds its record in the chain once it commits, as it expects:
-- the seal takes the chain's lock until that commit and chains what is
-- pending in insertion order, the records other writers committed before
-- this one and then this one. One chain, one way of hashing it (audit_seal),
-- and the chain's order stays the order the records were written in. A
-- rollback takes the record and that seal's work back; what was pending
-- stays pending for the next seal. The caller's transaction holds the
-- chain's lock to its commit, as the older release's own append did.
--
-- Answers the chain's head id after the seal: this record's id, or a later
-- one when records written after it were sealed with it. (The older release
-- only awaits the statement.) Past a backlog of 1000 pending records, this
-- one may wait for the next seal, like any other.
create function audit_append(tail text) returns bigint
language plpgsql set enable_seqscan = off as $$
declare
  head bigint;
begin
  insert into audit_pending (tail) values (audit_append.tail);
  perform audit_seal(1000);
  select head_id into strict head from audit_chain where singleton;
  return head;
end $$;
