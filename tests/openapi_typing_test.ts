/**
 * What the document types, for clients that generators make from it:
 * `Last-Event-ID` as the string of digits a header is, `X-Request-Id` on
 * every response, and `expiresAt` nullable where null means no expiry.
 */
import { parse } from "yaml";
import { assertEquals } from "./support/assert.ts";

interface Operation {
  parameters?: { name: string; in: string; schema: Record<string, unknown> }[];
  responses: Record<string, { headers?: Record<string, unknown> }>;
}

const doc = parse(
  await Deno.readTextFile(new URL("../openapi/openapi.yaml", import.meta.url)),
) as {
  paths: Record<string, Record<string, Operation>>;
  components: {
    schemas: Record<string, { properties: Record<string, { type: unknown }> }>;
  };
};

const operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
  Object.entries(methods).map(([method, op]) => ({ path, method, op }))
);

Deno.test("Last-Event-ID is declared a string of digits, not an integer", () => {
  const { op } = operations.find((o) =>
    o.path === "/api/audit/stream" && o.method === "get"
  )!;
  const header = op.parameters!.find((p) => p.name === "Last-Event-ID")!;
  assertEquals(header.in, "header");
  assertEquals(header.schema.type, "string");
  assertEquals(header.schema.pattern, "^[0-9]{1,16}$");
});

Deno.test("every response of every operation declares the X-Request-Id header", () => {
  const missing = operations.flatMap(({ path, method, op }) =>
    Object.entries(op.responses)
      .filter(([, r]) => !r.headers?.["X-Request-Id"])
      .map(([status]) => `${method.toUpperCase()} ${path} ${status}`)
  );
  assertEquals(missing, []);
});

Deno.test("a new key's expiresAt is typed nullable, as null means no expiry", () => {
  const { CreateApiKey, ApiKey } = doc.components.schemas;
  assertEquals(CreateApiKey.properties.expiresAt.type, ["string", "null"]);
  assertEquals(ApiKey.properties.expiresAt.type, ["string", "null"]);
});
