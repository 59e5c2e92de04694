-- Delegated administration, reach: an assignment may be limited to the
-- members of one group (`reach_group_id`; null: every user). Expand-only: a
-- release without this reads a limited assignment as one over everyone,
-- which it never makes (only this release writes the column).
alter table role_assignments
  add column if not exists reach_group_id integer references scim_groups (id);

-- A holder may hold one role over several groups, and over everyone: once
-- per (holder, role, reach). The new unique indexes come first, so a
-- release running beside this one is never without its uniqueness.
create unique index if not exists role_assignments_user_reach
  on role_assignments (user_id, role_id, coalesce(reach_group_id, 0))
  where user_id is not null;
create unique index if not exists role_assignments_group_reach
  on role_assignments (group_id, role_id, coalesce(reach_group_id, 0))
  where group_id is not null;
alter table role_assignments
  drop constraint if exists role_assignments_user_id_role_id_key;
drop index if exists role_assignments_group;

-- A group's deletion ends the assignments limited to it, and adding a member
-- reads them: both find them by the group.
create index if not exists role_assignments_reach
  on role_assignments (reach_group_id) where reach_group_id is not null;
