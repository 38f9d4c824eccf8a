// The console shell: sign-in, then a navigation bar and the page the hash names.
import { useEffect, useState } from 'preact/hooks';
import { ApiError, signIn, signOut, whenUnauthorized } from './api.ts';
import { describeError } from './components/load.tsx';
import { Keys } from './pages/keys.tsx';
import { Models } from './pages/models.tsx';
import { Overview } from './pages/overview.tsx';
import { ProjectPage, Projects } from './pages/projects.tsx';
import { Requests } from './pages/requests.tsx';
import { Upstreams } from './pages/upstreams.tsx';
import type { Route } from './router.ts';
import { href, useRoute } from './router.ts';
import { readOnlyReason, SessionContext } from './session.ts';
import type { Session } from './types.ts';

function SignIn({ onSignedIn, notice }: { onSignedIn: (s: Session) => void; notice?: string }) {
  const [value, setValue] = useState('');
  const [error, setError] = useState<string | undefined>(notice);
  const [disabled, setDisabled] = useState(false);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const session = await signIn(value.trim());
      setValue('');
      onSignedIn(session);
    } catch (err) {
      if (err instanceof ApiError && err.code === 'admin_disabled') setDisabled(true);
      else setError(err instanceof ApiError && err.status === 401 ? 'That token is not valid.' : describeError(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="signin">
      <form class="panel" onSubmit={submit} aria-label="Sign in">
        <h1>tollgate console</h1>
        {disabled ? (
          <div class="note" data-testid="admin-disabled">
            <p>The admin API is off: no admin token is configured on this gateway.</p>
            <p>
              Set <code>TOLLGATE_ADMIN_TOKENS</code> (comma-separated <code>name:role:token</code>, role <code>read</code> or <code>write</code>) or <code>TOLLGATE_ADMIN_TOKENS_FILE</code> (one per line) and restart the gateway.
            </p>
          </div>
        ) : (
          <p class="muted">Sign in with an admin token. It is kept in this tab's memory only: reloading the page signs you out.</p>
        )}
        <label>
          Admin token
          <input type="password" name="token" autocomplete="off" spellcheck={false} value={value} onInput={(e) => setValue(e.currentTarget.value)} required autofocus />
        </label>
        <button type="submit" disabled={busy || !value.trim()}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
      </form>
    </main>
  );
}

const NAV: { label: string; route: Route }[] = [
  { label: 'Overview', route: { page: 'overview' } },
  { label: 'Projects', route: { page: 'projects' } },
  { label: 'Keys', route: { page: 'keys' } },
  { label: 'Requests', route: { page: 'requests' } },
  { label: 'Models', route: { page: 'models' } },
  { label: 'Upstreams', route: { page: 'upstreams' } },
];

function Page({ route }: { route: Route }) {
  switch (route.page) {
    case 'projects':
      return <Projects />;
    case 'project':
      return <ProjectPage key={`${route.organization}/${route.project}`} organization={route.organization} project={route.project} />;
    case 'keys':
      return <Keys />;
    case 'requests':
      return <Requests />;
    case 'models':
      return <Models />;
    case 'upstreams':
      return <Upstreams />;
    default:
      return <Overview />;
  }
}

export function App() {
  const [session, setSession] = useState<Session>();
  const [notice, setNotice] = useState<string>();
  const route = useRoute();
  useEffect(
    () =>
      whenUnauthorized(() => {
        setSession(undefined);
        setNotice('The gateway no longer accepts that token: sign in again.');
      }),
    [],
  );
  if (!session)
    return (
      <SignIn
        notice={notice}
        onSignedIn={(s) => {
          setNotice(undefined);
          setSession(s);
        }}
      />
    );
  const current = route.page === 'project' ? 'projects' : route.page;
  const readOnly = readOnlyReason(session);
  return (
    <SessionContext.Provider value={session}>
      <nav class="top">
        <span class="brand">tollgate</span>
        {NAV.map((n) => (
          <a key={n.label} href={href(n.route)} class={n.route.page === current ? 'active' : ''} aria-current={n.route.page === current ? 'page' : undefined}>
            {n.label}
          </a>
        ))}
        <span class="spacer" />
        <span class="who" title={readOnly ?? 'read-write'} data-testid="who">
          {session.name} · {session.writable ? 'read-write' : 'read-only'}
          {session.mode === 'kubernetes' ? ' · kubernetes' : ''}
        </span>
        <button
          type="button"
          class="secondary small"
          onClick={() => {
            signOut();
            setSession(undefined);
          }}
        >
          Sign out
        </button>
      </nav>
      <main>
        <Page route={route} />
      </main>
    </SessionContext.Provider>
  );
}
