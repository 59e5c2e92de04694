/**
 * What the console's browser tests share: a service with a watched
 * Chromium page, signing in, waiting for headings, axe-core on a page,
 * screenshots for docs/console.md, and the check that nothing left the
 * service's origin or broke its CSP.
 */
import type { Browser, Page } from "playwright-core";
import { assert, assertEquals } from "./assert.ts";
import {
  addVirtualAuthenticator,
  axeFindings,
  launch,
  watch,
  type Watched,
} from "./browser.ts";
import {
  ADMIN,
  startService,
  startServiceOnLocalhost,
  type TestService,
} from "./service.ts";

const ARTIFACTS = new URL("../artifacts/", import.meta.url);
/** The copies docs/console.md shows; `UPDATE_SCREENSHOTS=1` refreshes them. */
const SCREENSHOTS = new URL("../screenshots/", import.meta.url);

/** Saves a screenshot for a look after the run, and for the docs when asked. */
export async function shot(page: Page, name: string) {
  const png = await page.screenshot({ fullPage: true });
  await Deno.mkdir(ARTIFACTS, { recursive: true });
  await Deno.writeFile(new URL(`console-${name}.png`, ARTIFACTS), png);
  if (Deno.env.get("UPDATE_SCREENSHOTS") === "1") {
    await Deno.writeFile(new URL(`console-${name}.png`, SCREENSHOTS), png);
  }
}

/** No serious or critical axe-core finding on the page as it stands. */
export async function accessible(page: Page, where: string) {
  assertEquals(await axeFindings(page), [], `axe-core on ${where}`);
}

/** The page's main heading, once it reads `text`. */
export async function heading(page: Page, text: string | RegExp) {
  await page.getByRole("heading", { level: 1, name: text }).waitFor();
}

export interface Console extends AsyncDisposable {
  svc: TestService;
  /** Where the page reaches the service: its base URL, or http://localhost:PORT. */
  origin: string;
  browser: Browser;
  page: Page;
  watched: Watched;
}

/**
 * A service, a browser and a page watched from its first request. With
 * `passkeys`, the service is on http://localhost (its PUBLIC_URL, the
 * passkeys' relying party) and the page has a virtual authenticator.
 */
export async function openConsole(
  { env = {}, width = 1280, allowFailed, passkeys = false, onLocalhost }: {
    env?: Record<string, string>;
    width?: number;
    allowFailed?: (url: string) => boolean;
    passkeys?: boolean;
    /** At http://localhost:PORT, which PUBLIC_URL names (passkeys are there too). */
    onLocalhost?: boolean;
  } = {},
): Promise<Console> {
  const options = { bcryptCost: 4 };
  const { svc, origin } = passkeys || onLocalhost
    ? await startServiceOnLocalhost(env, options)
    : await startService(env, options).then((svc) => ({
      svc,
      origin: svc.baseUrl,
    }));
  const browser = await launch();
  const page = await browser.newPage({
    viewport: { width, height: 900 },
    locale: "en-GB",
    timezoneId: "UTC",
  });
  page.setDefaultTimeout(15_000);
  const watched = await watch(page, { allowFailed });
  if (passkeys) await addVirtualAuthenticator(page);
  return {
    svc,
    origin,
    browser,
    page,
    watched,
    async [Symbol.asyncDispose]() {
      await browser.close();
      await svc[Symbol.asyncDispose]();
    },
  };
}

/** Nothing left the origin; no script error, failed load or CSP violation. */
export function clean({ origin, watched }: Console) {
  const outside = watched.requested.filter((u) =>
    !u.startsWith("data:") && new URL(u).origin !== origin
  );
  assertEquals(outside, [], "every request stays on the service");
  assertEquals(watched.problems, [], "no script error and no CSP violation");
}

/** The usernames the users page lists. */
export const rows = (page: Page) =>
  page.locator("table.list tbody tr td:first-child").allTextContents();

/** Waits until `check` holds (15 s at most). */
export async function eventually(check: () => Promise<boolean>, what: string) {
  const deadline = Date.now() + 15_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Opens a section from the top navigation. */
export async function section(page: Page, name: string) {
  await page.getByRole("navigation", { name: "Sections" })
    .getByRole("link", { name }).click();
  await heading(page, name);
}

/** Opens the console at `origin` and sends a username and password. */
export async function enterPassword(
  page: Page,
  origin: string,
  { username = ADMIN.username, password = ADMIN.password } = {},
) {
  await page.goto(`${origin}/admin`);
  await heading(page, "Sign in");
  await page.getByLabel("Username", { exact: true }).fill(username);
  await page.getByLabel("Password", { exact: true }).fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
}

/** Signs in with a password alone (onto the overview), then opens the users page. */
export async function signIn(
  page: Page,
  origin: string,
  credentials: { username?: string; password?: string } = {},
) {
  await enterPassword(page, origin, credentials);
  await heading(page, "Overview");
  await section(page, "Users");
}

/** Creates a user through the API for a test's page to work on. */
export async function someone(
  svc: TestService,
  username: string,
  name: string,
) {
  const created = await svc.admin.post("/api/users", {
    body: {
      username,
      name,
      email: `${username}@example.com`,
      password: `${username}-password`,
      role: "viewer",
    },
  });
  assert(created.ok);
  return created.data;
}

/** Pixels the page is wider than its window (0: no horizontal scrolling). */
export const overflow = (page: Page) =>
  page.evaluate(() => {
    const root = (globalThis as unknown as {
      document: {
        documentElement: { scrollWidth: number; clientWidth: number };
      };
    }).document.documentElement;
    return root.scrollWidth - root.clientWidth;
  });
