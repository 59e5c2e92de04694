-- Delegated administration: roles (named sets of permissions, see
-- src/auth/permissions.ts) and their assignments to users. Expand-only: a
-- release without them keeps working beside this one (its admins stay
-- admins, its viewers hold nothing).
create table roles (
  id integer generated always as identity primary key,
  name text not null,
  -- The name's canonical key (src/users/canonical.ts), unique: `Help desk`
  -- and `HELP DESK` are one role.
  name_key text not null unique,
  description text not null default '',
  permissions text[] not null default '{}',
  -- Raised by every change: a PATCH with `If-Match` compares it.
  version integer not null default 1,
  created_at timestamptz not null default now()
);

-- A role given to a user. Group grants (`group_id`) and a reach limited to
-- a group's members (`reach_group_id`) are columns to come beside
-- `user_id`; the resolution (src/db/grants.ts) reads this table only.
create table role_assignments (
  id integer generated always as identity primary key,
  role_id integer not null references roles (id),
  user_id integer not null references users (id) on delete cascade,
  created_at timestamptz not null default now(),
  unique (user_id, role_id)
);
create index role_assignments_role on role_assignments (role_id);

-- The permissions a key may use: null, all of its minter's.
alter table api_keys add column if not exists permissions text[];
