// Keys: list and filter; create (the secret is shown once, with a copy button); revoke after a confirm.
import { useState } from 'preact/hooks';
import { list, post } from '../api.ts';
import { describeError, ErrorNote, useLoad } from '../components/load.tsx';
import { usePaged } from '../components/paged.tsx';
import { href } from '../router.ts';
import { readOnlyReason, useSession } from '../session.ts';
import type { ApiKey, CreatedKey, KeyState, Organization } from '../types.ts';

export function StateBadge({ state }: { state: KeyState }) {
  return <span class={`badge ${state}`}>{state}</span>;
}

function RevokeButton({ k, onRevoked }: { k: ApiKey; onRevoked: (k: ApiKey) => void }) {
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  if (k.state !== 'active') return null;
  if (!confirming)
    return (
      <button type="button" class="danger small" data-action="revoke" onClick={() => setConfirming(true)}>
        Revoke
      </button>
    );
  const revoke = async () => {
    setBusy(true);
    try {
      onRevoked(await post<ApiKey>(`/admin/v1/keys/${encodeURIComponent(k.id)}/revoke`));
    } catch (err) {
      setError(describeError(err));
      setBusy(false);
    }
  };
  return (
    <span class="confirm">
      <span>Revoke {k.prefix}…? Calls with it fail at once.</span>
      <button type="button" class="danger small" data-action="confirm-revoke" disabled={busy} onClick={revoke}>
        Yes, revoke
      </button>
      <button type="button" class="secondary small" disabled={busy} onClick={() => setConfirming(false)}>
        Cancel
      </button>
      {error && <span class="error">{error}</span>}
    </span>
  );
}

export function KeysTable({ rows, writable, onRevoked, showProject = true }: { rows: ApiKey[]; writable: boolean; onRevoked: (k: ApiKey) => void; showProject?: boolean }) {
  if (rows.length === 0) return <p class="muted">No keys match.</p>;
  return (
    <table class="data" data-testid="keys-table">
      <thead>
        <tr>
          <th>Prefix</th>
          <th>Name</th>
          {showProject && <th>Organization / project</th>}
          <th>State</th>
          <th>Created</th>
          <th>Expires</th>
          <th>Limits / budget</th>
          {writable && <th />}
        </tr>
      </thead>
      <tbody>
        {rows.map((k) => (
          <tr key={k.id} data-key-id={k.id}>
            <td class="mono">{k.prefix}…</td>
            <td>{k.name ?? <span class="muted">{k.id}</span>}</td>
            {showProject && (
              <td>
                <a href={href({ page: 'project', organization: k.organization, project: k.project })}>
                  {k.organization} / {k.project}
                </a>
              </td>
            )}
            <td>
              <StateBadge state={k.state} />
            </td>
            <td class="mono">{k.createdAt?.slice(0, 16).replace('T', ' ') ?? '—'}</td>
            <td class="mono">{k.expiresAt?.slice(0, 16).replace('T', ' ') ?? 'never'}</td>
            <td class="small-text">{[k.limits && limitsText(k.limits), k.budget && budgetText(k.budget)].filter(Boolean).join('; ') || '—'}</td>
            {writable && (
              <td class="actions">
                <RevokeButton k={k} onRevoked={onRevoked} />
              </td>
            )}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function limitsText(l: NonNullable<ApiKey['limits']>): string {
  const parts = [l.rpm && `${l.rpm} rpm`, l.tpm && `${l.tpm} tpm`, l.concurrency && `${l.concurrency} at once`].filter(Boolean);
  for (const m of l.models ?? []) parts.push(`${m.model}: ${[m.rpm && `${m.rpm} rpm`, m.tpm && `${m.tpm} tpm`, m.concurrency && `${m.concurrency} at once`].filter(Boolean).join(', ')}`);
  return parts.join(', ');
}

export function budgetText(b: NonNullable<ApiKey['budget']>): string {
  return [b.day !== undefined && `${b.day}/day`, b.month !== undefined && `${b.month}/month`, b.total !== undefined && `${b.total} total`].filter(Boolean).join(', ') + ' points';
}

function SecretOnce({ created, onClose }: { created: CreatedKey; onClose: () => void }) {
  const [copied, setCopied] = useState<string>();
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(created.secret);
      setCopied('Copied.');
    } catch {
      // No clipboard permission (an insecure origin, say): select the text so Ctrl+C copies it.
      const el = document.getElementById('new-secret');
      if (el) getSelection()?.selectAllChildren(el);
      setCopied('Selected: press Ctrl+C to copy.');
    }
  };
  return (
    <section class="panel secret" role="status" data-testid="new-key">
      <h3>Key created: {created.key.prefix}…</h3>
      <p>This is the only time the secret is shown. Copy it now and keep it in your secret store.</p>
      <div class="secret-row">
        <code id="new-secret" class="mono" data-testid="new-secret">
          {created.secret}
        </code>
        <button type="button" onClick={copy}>
          Copy
        </button>
        <button type="button" class="secondary" onClick={onClose}>
          Done
        </button>
      </div>
      {copied && <p class="muted">{copied}</p>}
    </section>
  );
}

function CreateKey({ orgs, onCreated, initial }: { orgs: Organization[]; onCreated: (c: CreatedKey) => void; initial?: { organization: string; project: string } }) {
  const [organization, setOrganization] = useState(initial?.organization ?? orgs[0]?.id ?? '');
  const [project, setProject] = useState(initial?.project ?? '');
  const [name, setName] = useState('');
  const [expires, setExpires] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const projects = orgs.find((o) => o.id === organization)?.projects ?? [];
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const body = { organization, project, ...(name ? { name } : {}), ...(expires ? { expiresAt: new Date(`${expires}T00:00:00Z`).toISOString() } : {}) };
      onCreated(await post<CreatedKey>('/admin/v1/keys', body));
      setName('');
      setExpires('');
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="panel form-row" onSubmit={submit} aria-label="Create a key">
      <h3>Create a key</h3>
      <label>
        Organization
        <select name="organization" value={organization} onChange={(e) => setOrganization(e.currentTarget.value)} required>
          {orgs.map((o) => (
            <option key={o.id} value={o.id}>
              {o.id}
            </option>
          ))}
        </select>
      </label>
      <label>
        Project
        <input name="project" list="project-ids" value={project} onInput={(e) => setProject(e.currentTarget.value)} required pattern="[a-z0-9]([a-z0-9._\-]*[a-z0-9])?" placeholder="web" />
        <datalist id="project-ids">
          {projects.map((p) => (
            <option key={p} value={p} />
          ))}
        </datalist>
      </label>
      <label>
        Name (optional)
        <input name="name" value={name} onInput={(e) => setName(e.currentTarget.value)} placeholder="ci-runner" maxLength={200} />
      </label>
      <label>
        Expires (optional, UTC)
        <input name="expiresAt" type="date" value={expires} onInput={(e) => setExpires(e.currentTarget.value)} />
      </label>
      <button type="submit" disabled={busy || !organization || !project} data-action="create-key">
        {busy ? 'Creating…' : 'Create key'}
      </button>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}

/** The create form, the once-only secret, and the key table for a scope (everything, or one project). */
export function KeysManager({ organization, project }: { organization?: string; project?: string }) {
  const session = useSession();
  const note = readOnlyReason(session);
  const [state, setState] = useState<'' | KeyState>('');
  const [org, setOrg] = useState(organization ?? '');
  const [proj, setProj] = useState(project ?? '');
  const [created, setCreated] = useState<CreatedKey>();
  const orgs = useLoad(() => list<Organization>('/admin/v1/organizations', { limit: 500 }), []);
  const keys = usePaged<ApiKey>('/admin/v1/keys', { organization: org || undefined, project: proj || undefined, state: state || undefined, limit: 50 });
  const fixedScope = organization !== undefined;
  return (
    <>
      {note ? (
        <p class="note" data-testid="read-only-note">
          {note}
        </p>
      ) : (
        orgs.data && (
          <CreateKey
            orgs={orgs.data.data}
            initial={fixedScope ? { organization: organization!, project: project ?? '' } : undefined}
            onCreated={(c) => {
              setCreated(c);
              keys.reload();
            }}
          />
        )
      )}
      {created && <SecretOnce created={created} onClose={() => setCreated(undefined)} />}
      <section class="panel">
        <div class="panel-head">
          <h3>Keys</h3>
          <div class="controls">
            {!fixedScope && (
              <>
                <select aria-label="Filter by organization" value={org} onChange={(e) => setOrg(e.currentTarget.value)}>
                  <option value="">All organizations</option>
                  {orgs.data?.data.map((o) => (
                    <option key={o.id} value={o.id}>
                      {o.id}
                    </option>
                  ))}
                </select>
                <input aria-label="Filter by project" placeholder="project" value={proj} onChange={(e) => setProj(e.currentTarget.value.trim())} />
              </>
            )}
            <select aria-label="Filter by state" value={state} onChange={(e) => setState(e.currentTarget.value as KeyState)}>
              <option value="">Any state</option>
              <option value="active">Active</option>
              <option value="revoked">Revoked</option>
              <option value="expired">Expired</option>
            </select>
          </div>
        </div>
        <ErrorNote error={keys.error ?? orgs.error} />
        <KeysTable rows={keys.rows} writable={session.writable} showProject={!fixedScope} onRevoked={(k) => keys.replace((r) => r.id === k.id, k)} />
        {keys.more && (
          <button type="button" class="secondary" disabled={keys.loading} onClick={keys.loadMore}>
            Load more
          </button>
        )}
      </section>
    </>
  );
}

export function Keys() {
  return (
    <div class="page">
      <header class="page-head">
        <h2>Keys</h2>
      </header>
      <KeysManager />
    </div>
  );
}
