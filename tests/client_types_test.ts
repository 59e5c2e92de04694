/**
 * The contract reaches the consumer through the client's types. Each
 * `@ts-expect-error` below is a mistake a consumer could make; `deno check`
 * (and so `deno test`) fails if the types ever stop rejecting it, since an
 * unused `@ts-expect-error` is itself an error. The calls also run, so the
 * service is seen to reject at run time what the types reject; every
 * runtime assertion checks a value the service answered.
 */
import type { ErrorMessage } from "@user-admin/client";
import { assert, assertEquals } from "./support/assert.ts";
import { sharedService } from "./support/service.ts";

const service = sharedService();

/** True only when A and B are the same type (not merely assignable). */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends
  (<T>() => T extends B ? 1 : 2) ? true : false;
const typeIs = <_ extends true>() => {};

const carol = {
  username: "carol",
  name: "Carol",
  email: "carol@example.com",
  password: "correct horse",
  role: "viewer",
} as const;

Deno.test("each operation's error messages are the contract's, status by status", () => {
  typeIs<
    Equal<
      ErrorMessage<"/api/users", "post">,
      | "Invalid Idempotency-Key"
      | "All fields are required"
      | "Role must be admin or viewer"
      | "Password must be at least 8 characters"
      | "Username must be at most 64 characters without control characters"
      | "Username contains characters that are not allowed"
      | "Name must be at most 200 characters"
      | "Name contains characters that are not allowed"
      | "Email must be a valid address"
      | "Password must be at most 72 bytes"
      | "Password must not contain NUL characters"
      | "Department must be at most 100 characters"
      | "Invalid request body"
      | "Unauthorised"
      | "Forbidden"
      | "Username or email already exists"
      | "Request with this Idempotency-Key is in progress"
      | "Request body too large"
      | "Idempotency-Key reused with a different request"
      | "Failed to create user"
      | "Second factor enrollment required"
      | "Recent second factor required"
    >
  >();
  typeIs<
    Equal<
      ErrorMessage<"/api/users/{id}", "delete">,
      | "You cannot delete your own account"
      | "Unauthorised"
      | "Forbidden"
      | "User not found"
      | "Precondition failed"
      | "Delete failed"
      | "Second factor enrollment required"
      | "Recent second factor required"
      | "Cannot act on a more privileged user"
    >
  >();
  typeIs<
    Equal<
      ErrorMessage<"/api/auth/login", "post">,
      | "Username and password are required"
      | "Invalid username or password"
      | "Forbidden"
      | "Account disabled"
      | "Request body too large"
      | "Too many login attempts"
      | "Login failed"
      | "Invalid request body"
      | "Second factor required"
      | "Invalid code"
      | "Use your identity provider to sign in"
    >
  >();
  // @ts-expect-error: a message of another operation is not this one's
  typeIs<Equal<ErrorMessage<"/api/users", "get">, "User not found">>();
});

Deno.test("a correct call compiles and a failure narrows to its status's own message", async () => {
  const svc = await service();
  const created = await svc.admin.post("/api/users", { body: carol });
  assert(created.ok);
  typeIs<Equal<typeof created.status, 201>>();
  assertEquals(created.status, 201);
  assertEquals(created.data.role, "viewer");

  const again = await svc.admin.post("/api/users", { body: carol });
  assert(!again.ok);
  if (again.status === 409) {
    typeIs<
      Equal<
        typeof again.error,
        | "Username or email already exists"
        | "Request with this Idempotency-Key is in progress"
      >
    >();
  }
  assertEquals(again, {
    ok: false,
    status: 409,
    error: "Username or email already exists",
  });
  // Compile-time only (deno check proves each line is rejected):
  // @ts-expect-error: creation never answers 404
  const _status: typeof again.status = 404;
  // @ts-expect-error: not the contract's message for any status of creation
  const _error: typeof again.error = "User already exists";
});

Deno.test("a wrong field name, role literal, id type, path or method fails deno check, and the service refuses it too", async () => {
  const svc = await service();
  const api = svc.admin;

  const misspelt = await api.post("/api/users", {
    body: {
      // @ts-expect-error: `usernme` is no field of CreateUser
      usernme: "dave",
      name: "Dave",
      email: "dave@example.com",
      password: "correct horse",
      role: "viewer",
    },
  });
  assertEquals(misspelt, {
    ok: false,
    status: 400,
    error: "All fields are required",
  });

  const badRole = await api.post("/api/users", {
    // @ts-expect-error: "superuser" is not a Role
    body: { ...carol, role: "superuser" },
  });
  assertEquals(badRole, {
    ok: false,
    status: 400,
    error: "Role must be admin or viewer",
  });

  const badPatch = await api.patch("/api/users/{id}", {
    params: { path: { id: svc.adminAccount.id } },
    // @ts-expect-error: `rol` is no field of UpdateUser
    body: { rol: "viewer" },
  });
  assert(badPatch.ok, "unknown fields are ignored, so nothing changed");
  assertEquals(badPatch.data.role, "admin");

  const badId = await api.get("/api/users/{id}", {
    // @ts-expect-error: the id is an integer, not a string
    params: { path: { id: "abc" } },
  });
  assertEquals(badId, { ok: false, status: 404, error: "User not found" });

  // (The empty init keeps the compiler's complaint on the path itself.)
  // @ts-expect-error: no such path
  const noPath = await api.get("/api/user", {});
  assertEquals(noPath.ok, false);
  assertEquals(noPath.status, 404);

  // @ts-expect-error: /api/users has no DELETE
  const noMethod = await api.delete("/api/users", {});
  assertEquals(noMethod.ok, false);
  assertEquals(noMethod.status, 405);
});
