/**
 * The admin console: signs a person in with the API's own cookie session,
 * then shows the page the hash names. Pages come from `pages.tsx`.
 */
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { api, onEnrollmentRequired, onSignedOut, send } from "./api.ts";
import type { Account } from "../../clients/mod.ts";
import { StepUpDialog } from "./factor.tsx";
import {
  ACCOUNT_PATH,
  FACTORS_PATH,
  NOT_FOUND,
  type Page,
  PAGES,
} from "./pages.tsx";
import {
  currentLocation,
  href,
  match,
  navigate,
  useLocation,
} from "./router.ts";
import { SignIn } from "./pages/signin.tsx";
import { Notice, Title } from "./ui.tsx";
import type { Failure, Reply } from "./api.ts";
import { Held } from "./access.ts";

function App() {
  // undefined: not known yet; null: nobody signed in.
  const [me, setMe] = useState<Account | null>();
  // What the person may do: the navigation, pages and buttons follow it.
  const [held, setHeld] = useState<ReadonlySet<string>>();
  const [checkFailed, setCheckFailed] = useState<Failure>();
  const [endedWith, setEndedWith] = useState<string>();
  const loc = useLocation();

  const permitted = (answer: Reply<{ permissions: string[] }>) => {
    if (answer.ok) setHeld(new Set(answer.data.permissions));
    else if (answer.status !== 401) setCheckFailed(answer);
  };
  const loadPermissions = async () => {
    setCheckFailed(undefined);
    permitted(await send(() => api.GET("/api/auth/permissions")));
  };
  const check = async () => {
    setCheckFailed(undefined);
    // Side by side: the first page waits for one round trip, not two.
    const [answer, allowed] = await Promise.all([
      send(() => api.GET("/api/auth/me")),
      send(() => api.GET("/api/auth/permissions")),
    ]);
    if (answer.ok) {
      setMe(answer.data);
      permitted(allowed);
    } else if (answer.status === 401) setMe(null);
    else setCheckFailed(answer);
  };
  useEffect(() => {
    check();
    const offEnrol = onEnrollmentRequired(() => {
      // Nothing else answers until a factor is set up: go where that is done.
      if (currentLocation().path !== FACTORS_PATH) {
        navigate(href(FACTORS_PATH, { required: "1" }), true);
      }
    });
    const offSignedOut = onSignedOut((message) => {
      setMe((was) => {
        if (was) setEndedWith(message);
        return null;
      });
    });
    return () => {
      offEnrol();
      offSignedOut();
    };
  }, []);

  if (checkFailed) {
    return (
      <main id="main">
        <Title>User administration</Title>
        <Notice
          failure={checkFailed}
          onRetry={me ? loadPermissions : check}
        />
      </main>
    );
  }
  if (me === undefined) return <p class="loading" role="status">Loading…</p>;
  if (me === null) {
    return (
      <SignIn
        ended={endedWith}
        onSignedIn={(account) => {
          setEndedWith(undefined);
          setHeld(undefined);
          setMe(account);
          loadPermissions();
        }}
      />
    );
  }

  if (!held) return <p class="loading" role="status">Loading…</p>;
  const may = (p: Page) => !p.permission || held.has(p.permission);
  const sections = PAGES.filter((p) => p.nav && may(p));
  // An address without a page: the first section the person may use, else
  // their own account (a viewer's page: profile, password, factors).
  const path = location.hash.replace(/^#\/?/, "") === ""
    ? sections[0]?.pattern ?? ACCOUNT_PATH
    : loc.path;
  let page = NOT_FOUND;
  let params: Record<string, string> = {};
  for (const p of PAGES) {
    const found = match(p.pattern, path);
    if (found) {
      page = p;
      params = found;
      break;
    }
  }
  document.title = `${page.title} · User administration`;

  const signOut = async () => {
    await send(() => api.POST("/api/auth/logout"));
    setMe(null);
    setHeld(undefined);
  };

  return (
    <>
      <a class="skip" href="#main" onClick={skipToMain}>Skip to content</a>
      <header class="top">
        <span class="brand">User administration</span>
        {sections.length > 0 && (
          <nav aria-label="Sections">
            <ul>
              {sections.map((p) => (
                <li key={p.pattern}>
                  <a
                    href={href(p.pattern)}
                    aria-current={page.section === p.section
                      ? "page"
                      : undefined}
                  >
                    {p.nav}
                  </a>
                </li>
              ))}
            </ul>
          </nav>
        )}
        <div class="who">
          <a
            href={href(ACCOUNT_PATH)}
            aria-label={`${me.username}, my account`}
            aria-current={page.pattern === ACCOUNT_PATH ? "page" : undefined}
          >
            <bdi>{me.username}</bdi>
          </a>{" "}
          <a
            href={href(FACTORS_PATH)}
            aria-current={page.pattern === FACTORS_PATH ? "page" : undefined}
          >
            My second factors
          </a>{" "}
          <button type="button" class="secondary" onClick={signOut}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" key={path}>
        <Held.Provider value={held}>
          {may(page)
            ? page.render({ params, query: loc.query, me })
            : <NoAccess title={page.title} />}
        </Held.Provider>
      </main>
      <StepUpDialog />
    </>
  );
}

/** A page the person may not use: said plainly, not as the API's `Forbidden`. */
function NoAccess({ title }: { title: string }) {
  return (
    <>
      <Title>{title}</Title>
      <p>You do not have access to this page.</p>
    </>
  );
}

/** The skip link moves focus itself: its target is not a hash route. */
function skipToMain(e: Event) {
  e.preventDefault();
  const h1 = document.querySelector<HTMLElement>("main h1");
  h1?.focus();
}

render(<App />, document.getElementById("app")!);
