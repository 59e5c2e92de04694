-- An import's uploader is checked again when the upload ends and before
-- each batch (the key or session live, an admin, not disabled), as every
-- write re-checks its caller: the session it came with is kept beside the
-- key id (its token's SHA-256, as sessions keeps it). A job that failed for
-- another reason than a broken batch says why (`error`).
-- Expand-only: nullable columns, so a release without them keeps working
-- beside this one (a job it queues keeps no session: its account alone is
-- checked).
alter table import_jobs
  add column if not exists actor_session bytea,
  add column if not exists error text;
