-- When a provisioning connection last made a request (src/db/scim-connections.ts
-- writes it at most once a minute). Expand-only: a nullable column, so a
-- release without it keeps working beside this one.
alter table scim_connections add column if not exists last_used_at timestamptz;
