-- The list's version (users_version, migrations 004 and 017) moves without
-- the writes of users taking turns at their commits.
--
-- Why: 017's one row is locked by each write as it commits and held until
-- the commit is on disk, so every write of users waits for the flush of
-- the one before it: no two commits share a flush, and under concurrent
-- writes the flushes, not the work, bound the rate (12 writers creating
-- users: about half the rate, twice the database's CPU a write).
--
-- What changes: the version is the sum of 64 slots. A write bumps one slot,
-- picked at random, as it commits (a flag local to the transaction, as
-- before), so two writes wait for each other only when they pick the same
-- slot. Each bump raises its slot (clock_version), so the sum grows with
-- every write and still grows by the clock: the first slot starts at the
-- version the list had, the others at 0.
--
-- What stays: `users_version` is read as before (`version ... where
-- singleton`), now a view of the sum, so a previous release's reads keep
-- their meaning; the write and its slot's bump commit together, so a reader
-- sees the new rows and the new version together or neither. The triggers
-- are 017's; only the functions they call change.
create table users_version_slots (
  slot smallint primary key check (slot between 0 and 63),
  version bigint not null
);
insert into users_version_slots (slot, version)
select s, case when s = 0 then (select version from users_version) else 0 end
from generate_series(0, 63) s;

drop table users_version;
create view users_version as
select true as singleton, sum(version)::bigint as version
from users_version_slots;

-- The slot is drawn once, before the update: random() in its condition
-- would be drawn again for each row.
create function users_version_bump() returns void
language plpgsql set enable_seqscan = off as $$
declare
  picked smallint := floor(random() * 64);
begin
  update users_version_slots set version = clock_version(version)
  where slot = picked;
end $$;

create or replace function users_list_version_at_commit() returns trigger
language plpgsql as $$
begin
  if current_setting('users_version.bumped', true) is distinct from 'y' then
    perform set_config('users_version.bumped', 'y', true);
    perform users_version_bump();
  end if;
  return null;
end $$;

create or replace function users_list_version() returns trigger
language plpgsql as $$
begin
  if tg_op = 'TRUNCATE' then
    perform users_version_bump();
  end if;
  return null;
end $$;
