/**
 * The admin console: signs a person in with the API's own cookie session,
 * then shows the page the hash names. Pages come from `pages.tsx`.
 */
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { api, onEnrollmentRequired, onSignedOut, send } from "./api.ts";
import type { Account } from "../../clients/mod.ts";
import { StepUpDialog } from "./factor.tsx";
import { ACCOUNT_PATH, FACTORS_PATH, NOT_FOUND, PAGES } from "./pages.tsx";
import {
  currentLocation,
  href,
  match,
  navigate,
  useLocation,
} from "./router.ts";
import { SignIn } from "./pages/signin.tsx";
import { Notice, Title } from "./ui.tsx";
import type { Failure } from "./api.ts";

function App() {
  // undefined: not known yet; null: nobody signed in.
  const [me, setMe] = useState<Account | null>();
  const [checkFailed, setCheckFailed] = useState<Failure>();
  const [endedWith, setEndedWith] = useState<string>();
  const loc = useLocation();

  const check = async () => {
    setCheckFailed(undefined);
    const answer = await send(() => api.GET("/api/auth/me"));
    if (answer.ok) setMe(answer.data);
    else if (answer.status === 401) setMe(null);
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
        <Notice failure={checkFailed} onRetry={check} />
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
          setMe(account);
        }}
      />
    );
  }

  let page = NOT_FOUND;
  let params: Record<string, string> = {};
  for (const p of PAGES) {
    const found = match(p.pattern, loc.path);
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
  };

  return (
    <>
      <a class="skip" href="#main" onClick={skipToMain}>Skip to content</a>
      <header class="top">
        <span class="brand">User administration</span>
        <nav aria-label="Sections">
          <ul>
            {PAGES.filter((p) => p.nav).map((p) => (
              <li key={p.pattern}>
                <a
                  href={href(p.pattern)}
                  aria-current={page.section === p.section ? "page" : undefined}
                >
                  {p.nav}
                </a>
              </li>
            ))}
          </ul>
        </nav>
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
      <main id="main" key={loc.path}>
        {page.render({ params, query: loc.query, me })}
      </main>
      <StepUpDialog />
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
