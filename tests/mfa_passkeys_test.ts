/**
 * Passkeys as a browser makes them: Chromium's virtual WebAuthn
 * authenticator (DevTools protocol `WebAuthn.enable`,
 * `WebAuthn.addVirtualAuthenticator`) registers one and signs logins and
 * step-ups on http://localhost (a secure context), the relying party
 * PUBLIC_URL names. And Swagger UI, used by an admin with a factor.
 */
import type { Page } from "playwright-core";
import { assert, assertEquals } from "./support/assert.ts";
import {
  addVirtualAuthenticator,
  CHROMIUM_TOOL,
  launch,
  tryItOut,
} from "./support/browser.ts";
import { withTool } from "./support/conditions.ts";
import { newUser, startServiceOnLocalhost } from "./support/service.ts";
import {
  ageSecondFactor,
  enrolTotp,
  freshCode,
  records,
} from "./mfa_support.ts";

/** A page of the service's origin with a virtual authenticator attached. */
async function pageWithAuthenticator(page: Page, origin: string) {
  await addVirtualAuthenticator(page);
  const docs = await page.goto(`${origin}/docs`);
  assertEquals(docs?.status(), 200);
}

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

/** A JSON call from the page (its cookies, its origin). */
const call = (page: Page, path: string, body?: unknown) =>
  page.evaluate(
    async ({ path, body }): Promise<Answer> => {
      const res = await fetch(path, {
        method: body === undefined ? "GET" : "POST",
        headers: { "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: await res.json() };
    },
    { path, body },
  );

/** The browser's WebAuthn calls the page makes (Deno's types have no DOM). */
interface PageWebAuthn {
  PublicKeyCredential: {
    parseCreationOptionsFromJSON(json: unknown): unknown;
    parseRequestOptionsFromJSON(json: unknown): unknown;
  };
  navigator: {
    credentials: {
      create(o: { publicKey: unknown }): Promise<{ toJSON(): unknown }>;
      get(o: { publicKey: unknown }): Promise<{ toJSON(): unknown }>;
    };
  };
}

/** `navigator.credentials.create` with options the service gave: the credential as JSON. */
const create = (page: Page, options: unknown) =>
  page.evaluate(async (json) => {
    const web = globalThis as unknown as PageWebAuthn;
    const publicKey = web.PublicKeyCredential.parseCreationOptionsFromJSON(
      json,
    );
    return (await web.navigator.credentials.create({ publicKey })).toJSON();
  }, options);

/** `navigator.credentials.get` with these options (the challenge replaced when `challenge` is given). */
const sign = (page: Page, options: unknown, challenge?: string) =>
  page.evaluate(async ({ json, challenge }) => {
    const web = globalThis as unknown as PageWebAuthn;
    const publicKey = web.PublicKeyCredential.parseRequestOptionsFromJSON({
      ...json as Record<string, unknown>,
      ...challenge === undefined ? {} : { challenge },
    });
    return (await web.navigator.credentials.get({ publicKey })).toJSON();
  }, { json: options, challenge });

/** Registers a passkey for the page's signed-in user: the 201's body. */
async function registerPasskey(page: Page, name: string) {
  const options = await call(page, "/api/auth/mfa/passkeys/options", {});
  assertEquals(options.status, 200);
  const response = await create(page, options.body);
  const added = await call(page, "/api/auth/mfa/passkeys", { name, response });
  assertEquals(added.status, 201, JSON.stringify(added.body));
  return added.body;
}

Deno.test(withTool(
  "a passkey made by Chromium's virtual authenticator is enrolled, logs in as the second step and steps up; a replayed or foreign-challenge assertion answers 401 Invalid code",
  CHROMIUM_TOOL,
  async () => {
    const { svc, origin } = await startServiceOnLocalhost({}, {
      bcryptCost: 4,
    });
    await using _svc = svc;
    const created = await svc.admin.post("/api/users", {
      body: { ...newUser("carol"), role: "admin" },
    });
    assert(created.ok);
    const id = created.data.id;
    const credentials = { username: "carol", password: "carol-password" };
    await using browser = await launch();
    const context = await browser.newContext();
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    await pageWithAuthenticator(page, origin);

    assertEquals(
      (await call(page, "/api/auth/login", credentials)).status,
      200,
    );
    const added = await registerPasskey(page, "Laptop");
    assertEquals(added.name, "Laptop");
    assertEquals((added.recoveryCodes as string[]).length, 10);
    assertEquals(added.lastUsedAt, null);
    const listed = await call(page, "/api/auth/mfa");
    assertEquals(
      (listed.body.passkeys as { name: string }[]).map((p) => p.name),
      ["Laptop"],
    );
    assertEquals(listed.body.recoveryCodesLeft, 10);
    // The same authenticator again: the options exclude its credential.
    const excluded = await call(page, "/api/auth/mfa/passkeys/options", {});
    const twice = await create(page, excluded.body).then(
      () => "registered",
      (e: Error) => e.message,
    );
    assert(twice.includes("InvalidStateError"), twice);
    // A second authenticator (another page of the same browser, so the
    // same session): a second passkey, no first factor, so no new codes.
    const phone = await context.newPage();
    await pageWithAuthenticator(phone, origin);
    const second = await registerPasskey(phone, "Phone");
    assertEquals(second.recoveryCodes, null);
    await phone.close();
    assertEquals(
      (await records(svc, "mfa.enrolled", id)).map((r) => r.details),
      [{ method: "passkey" }, { method: "passkey" }],
    );

    // Log in again: the password, then the passkey.
    await call(page, "/api/auth/logout", {});
    const first = await call(page, "/api/auth/login", credentials);
    assertEquals([first.status, first.body], [401, {
      error: "Second factor required",
    }]);
    const options = await call(
      page,
      "/api/auth/login/second-factor/options",
      {},
    );
    assertEquals(options.status, 200);
    assertEquals(
      (options.body.allowCredentials as unknown[]).length,
      2,
      "the user's two passkeys are allowed",
    );
    const assertion = await sign(page, options.body);
    const loggedIn = await call(page, "/api/auth/login/second-factor", {
      passkey: assertion,
    });
    assertEquals(loggedIn.status, 200, JSON.stringify(loggedIn.body));
    assertEquals((await call(page, "/api/auth/me")).status, 200);
    assertEquals(
      (await records(svc, "login.succeeded", id)).at(-1)?.details,
      { methods: ["password", "passkey"] },
    );

    // The same assertion again, on a new pending login: its challenge is used.
    await call(page, "/api/auth/logout", {});
    await call(page, "/api/auth/login", credentials);
    const replayed = await call(page, "/api/auth/login/second-factor", {
      passkey: assertion,
    });
    assertEquals([replayed.status, replayed.body], [401, {
      error: "Invalid code",
    }]);
    // An assertion over a challenge the service never gave (the options'
    // own being still unused): refused, and that challenge still works.
    const fresh = await call(page, "/api/auth/login/second-factor/options", {});
    const forged = await sign(page, fresh.body, "bm90LW91ci1jaGFsbGVuZ2U");
    const refused = await call(page, "/api/auth/login/second-factor", {
      passkey: forged,
    });
    assertEquals([refused.status, refused.body], [401, {
      error: "Invalid code",
    }]);
    // The options' own challenge, signed: the login goes through.
    const right = await call(page, "/api/auth/login/second-factor", {
      passkey: await sign(page, fresh.body),
    });
    assertEquals(right.status, 200);

    // Step-up with the passkey.
    await ageSecondFactor(svc, id);
    const key = await call(page, `/api/users/${id}/keys`, { name: "k" });
    assertEquals([key.status, key.body], [403, {
      error: "Recent second factor required",
    }]);
    const stepOptions = await call(page, "/api/auth/step-up/options", {});
    assertEquals(stepOptions.status, 200);
    const stepAssertion = await sign(page, stepOptions.body);
    // Its challenge is the step-up's: a login does not take it.
    await call(page, "/api/auth/logout", {});
    await call(page, "/api/auth/login", credentials);
    const crossed = await call(page, "/api/auth/login/second-factor", {
      passkey: stepAssertion,
    });
    assertEquals(crossed.status, 401);
    const again = await call(page, "/api/auth/login/second-factor/options", {});
    await call(page, "/api/auth/login/second-factor", {
      passkey: await sign(page, again.body),
    });
    await ageSecondFactor(svc, id);
    const stepOptions2 = await call(page, "/api/auth/step-up/options", {});
    const stepped = await call(page, "/api/auth/step-up", {
      passkey: await sign(page, stepOptions2.body),
    });
    assertEquals([stepped.status, stepped.body], [200, { ok: true }]);
    assertEquals(
      (await call(page, `/api/users/${id}/keys`, { name: "k" })).status,
      201,
    );
    const summary = await svc.admin.get("/api/users/{id}", {
      params: { path: { id } },
    });
    assert(summary.ok);
    assertEquals(summary.data.mfa.passkeys.length, 2);
    assert(summary.data.mfa.passkeys.some((p) => p.lastUsedAt !== null));

    // Removing one needs a recent factor (it is); then the other remains.
    const passkeyId = summary.data.mfa.passkeys[0].id;
    const removed = await page.evaluate(
      (path) => fetch(path, { method: "DELETE" }).then((r) => r.status),
      `/api/auth/mfa/passkeys/${passkeyId}`,
    );
    assertEquals(removed, 200);
    const left = await call(page, "/api/auth/mfa");
    assertEquals((left.body.passkeys as unknown[]).length, 1);
  },
));

Deno.test(withTool(
  "another user's passkey assertion does not pass this user's second step",
  CHROMIUM_TOOL,
  async () => {
    const { svc, origin } = await startServiceOnLocalhost({}, {
      bcryptCost: 4,
    });
    await using _svc = svc;
    for (const name of ["dave", "erin"]) {
      assert((await svc.admin.post("/api/users", { body: newUser(name) })).ok);
    }
    await using browser = await launch();
    const daves = await browser.newContext();
    const erins = await browser.newContext();
    const davePage = await daves.newPage();
    const erinPage = await erins.newPage();
    await pageWithAuthenticator(davePage, origin);
    await pageWithAuthenticator(erinPage, origin);
    for (
      const [page, name] of [[davePage, "dave"], [erinPage, "erin"]] as const
    ) {
      await call(page, "/api/auth/login", {
        username: name,
        password: `${name}-password`,
      });
      await registerPasskey(page, name);
      await call(page, "/api/auth/logout", {});
      await call(page, "/api/auth/login", {
        username: name,
        password: `${name}-password`,
      });
    }
    // Erin's authenticator signs Dave's challenge: no passkey of Dave's.
    const options = await call(
      davePage,
      "/api/auth/login/second-factor/options",
      {},
    );
    const { allowCredentials: _, ...open } = options.body;
    const erinsAssertion = await sign(erinPage, open);
    const refused = await call(davePage, "/api/auth/login/second-factor", {
      passkey: erinsAssertion,
    });
    assertEquals([refused.status, refused.body], [401, {
      error: "Invalid code",
    }]);
    const malformed = await call(davePage, "/api/auth/login/second-factor", {
      passkey: { id: "x", rawId: "x", type: "public-key", response: {} },
    });
    assertEquals(malformed.status, 401);
  },
));

Deno.test(withTool(
  "an admin with a TOTP logs in through Swagger UI in two steps and lists users",
  CHROMIUM_TOOL,
  async () => {
    const { svc, origin } = await startServiceOnLocalhost({}, {
      bcryptCost: 4,
    });
    await using _svc = svc;
    const frank = await svc.userClient("admin", { password: "frank-password" });
    const { secret } = await enrolTotp(frank.client);
    await using browser = await launch();
    const page = await browser.newPage({
      viewport: { width: 1280, height: 900 },
    });
    page.setDefaultTimeout(15_000);
    await page.goto(`${origin}/docs`);
    const first = await tryItOut(page, "auth-login", {
      username: frank.account.username,
      password: "frank-password",
    });
    assertEquals(first.status, "401");
    assertEquals(JSON.parse(first.body!), { error: "Second factor required" });
    const second = await tryItOut(page, "mfa-loginSecondFactor", {
      code: await freshCode(svc, frank.account.id, secret),
    });
    assertEquals(second.status, "200");
    assertEquals(JSON.parse(second.body!).username, frank.account.username);
    const list = await tryItOut(page, "users-listUsers");
    assertEquals(list.status, "200");
  },
));
