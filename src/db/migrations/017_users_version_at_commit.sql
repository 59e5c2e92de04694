-- The list's version (users_version, migration 004) moves once per write,
-- when the write commits, instead of in each statement that writes users.
--
-- Why: the row is one for every writer, and a statement-level trigger takes
-- its lock in the middle of the write and holds it to the commit, so every
-- write of users on every instance waits for the one before it to finish
-- all its remaining statements and round trips (the audit record, ending
-- sessions, the client's own latency). A deferred constraint trigger takes
-- the lock at COMMIT: writes run side by side and take turns only for the
-- moment of their commits.
--
-- What stays: the version changes in the transaction that changed users,
-- so a reader sees the new rows and the new version together or neither,
-- and it still grows by the clock (clock_version). A transaction bumps it
-- once, however many rows and statements it wrote (a flag local to the
-- transaction). A previous release's writes go through the same triggers;
-- its reads of the version do not change.
--
-- What is new: an update that changes nothing a list shows or selects by
-- leaves the version alone: a login (`last_login_at`), a password reset
-- (the hash and its version) and the row's own version counter. Every
-- other column counts, those added later included, so polling clients get
-- 304 across logins and still see every change of the list.
--
-- TRUNCATE has no row triggers: the statement trigger of 004 stays for it,
-- its function now bumping for TRUNCATE alone. Replacing the function takes
-- no lock on users; creating the trigger takes a brief one that blocks
-- writes, not reads.
create function users_list_version_at_commit() returns trigger
language plpgsql set enable_seqscan = off as $$
begin
  if current_setting('users_version.bumped', true) is distinct from 'y' then
    perform set_config('users_version.bumped', 'y', true);
    update users_version set version = clock_version(version) where singleton;
  end if;
  return null;
end $$;

create or replace function users_list_version() returns trigger
language plpgsql set enable_seqscan = off as $$
begin
  if tg_op = 'TRUNCATE' then
    update users_version set version = clock_version(version) where singleton;
  end if;
  return null;
end $$;

create constraint trigger users_list_version_at_commit
after insert or delete on users
deferrable initially deferred
for each row execute function users_list_version_at_commit();

create constraint trigger users_list_version_at_commit_update
after update on users
deferrable initially deferred
for each row
when (to_jsonb(old) - array['last_login_at', 'password_hash',
    'password_version', 'version']
  is distinct from to_jsonb(new) - array['last_login_at', 'password_hash',
    'password_version', 'version'])
execute function users_list_version_at_commit();
