/** Import bodies as the import tests write them: records, one JSON a line. */

/** NDJSON of the records, each line ended. */
export const ndjson = (records: unknown[]) =>
  records.map((r) => JSON.stringify(r)).join("\n") + "\n";

/** An import record of this username, its name and e-mail made from it. */
export const person = (
  username: string,
  extra: Record<string, unknown> = {},
) => ({
  username,
  name: `Person ${username}`,
  email: `${username}@example.com`,
  ...extra,
});
