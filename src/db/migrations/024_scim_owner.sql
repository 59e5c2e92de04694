-- Which provisioning connection owns a user: the one that created it, or
-- the one that took an existing viewer over on its first write to them.
-- Only the owner writes the user, and only its groups set the user's role.
-- Expand-only: one column with a default, so a release without it keeps
-- working beside this one (what it links meanwhile is owned by none, and a
-- viewer owned by none is taken over by the next connection that writes
-- them).
--
-- A user has at most one owner among the live connections; a deleted
-- connection's ownership lapses with it (its column stays as it was).
alter table scim_user_links add column if not exists owner boolean not null
  default false;

-- The users a connection created own to it, as their `user.created`
-- records name it. A user whose record the retention already removed is
-- owned by none: a viewer is taken over again on the next write, an admin
-- stays read-only to every connection.
update scim_user_links l set owner = true
from audit_events a
where a.action = 'user.created' and a.target_id = l.user_id
  and a.details -> 'connection' ->> 'id' = l.connection_id::text
  and not l.owner;
