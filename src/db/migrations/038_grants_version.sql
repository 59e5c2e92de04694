-- The grants' version: what the roles assigned to users grant
-- (src/db/grants.ts) is read from role_assignments, scim_members and roles
-- alone, and every change of them moves this version, in the transaction
-- that changes them, as it commits. A session's lookup reads the version in
-- the statement that reads the session, so an instance may keep what a
-- session's roles granted at a version and skip resolving them while the
-- version holds (src/db/grants.ts, `grantsSeen`): a change is still seen by
-- the next request on every instance. Expand-only: a release without it
-- keeps working beside this one (its writes move the version through the
-- same triggers; it never reads it).
--
-- As users_version's (migration 017), the bump is a deferred constraint
-- trigger, once per transaction (a flag local to it): the row is locked
-- at COMMIT, the last lock a write takes, so two writes take turns only for
-- their commits and never wait on each other in a cycle. One row, not
-- users_version's slots: memberships and assignments change far less
-- often than users. A role's update counts only when its permissions
-- change. TRUNCATE has no row triggers: a statement trigger bumps for it.
create table grants_version (
  singleton boolean primary key default true check (singleton),
  version bigint not null
);
insert into grants_version (version) values (clock_version(null));

create function grants_version_bump() returns void
language plpgsql set enable_seqscan = off as $$
begin
  update grants_version set version = clock_version(version) where singleton;
end $$;

create function grants_version_at_commit() returns trigger
language plpgsql as $$
begin
  if current_setting('grants_version.bumped', true) is distinct from 'y' then
    perform set_config('grants_version.bumped', 'y', true);
    perform grants_version_bump();
  end if;
  return null;
end $$;

create function grants_version_truncated() returns trigger
language plpgsql as $$
begin
  perform grants_version_bump();
  return null;
end $$;

create constraint trigger grants_version_assignments
after insert or update or delete on role_assignments
deferrable initially deferred
for each row execute function grants_version_at_commit();

create constraint trigger grants_version_members
after insert or update or delete on scim_members
deferrable initially deferred
for each row execute function grants_version_at_commit();

create constraint trigger grants_version_roles
after delete on roles
deferrable initially deferred
for each row execute function grants_version_at_commit();

create constraint trigger grants_version_role_permissions
after update on roles
deferrable initially deferred
for each row
when (old.permissions is distinct from new.permissions)
execute function grants_version_at_commit();

create trigger grants_version_assignments_truncated
after truncate on role_assignments
for each statement execute function grants_version_truncated();

create trigger grants_version_members_truncated
after truncate on scim_members
for each statement execute function grants_version_truncated();

create trigger grants_version_roles_truncated
after truncate on roles
for each statement execute function grants_version_truncated();
