-- Delegated administration, groups: the groups SCIM pushes are also made
-- in /api (no connection), and a role may be given to a group (every
-- member holds it). Expand-only: a release without this reads a group
-- assignment as nobody's (its `user_id` is null).
alter table scim_groups alter column connection_id drop not null;

alter table role_assignments alter column user_id drop not null;
alter table role_assignments
  add column if not exists group_id integer references scim_groups (id);
alter table role_assignments drop constraint if exists role_assignments_holder;
alter table role_assignments add constraint role_assignments_holder
  check ((user_id is null) <> (group_id is null));
-- A group holds a role once; and the lookup (src/db/grants.ts) finds a
-- group's assignments by it.
create unique index if not exists role_assignments_group
  on role_assignments (group_id, role_id) where group_id is not null;
