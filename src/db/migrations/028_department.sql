-- An account's department (the first optional profile field: see
-- src/accounts/fields.ts). Expand-only: a nullable column, so a release
-- without it keeps working beside this one.
alter table users add column if not exists department text;
