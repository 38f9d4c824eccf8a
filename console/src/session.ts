// The signed-in session, shared by every page: who, which role, and whether writes are possible at all.
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Session } from './types.ts';

export const SessionContext = createContext<Session>({ name: '', role: 'read', mode: 'standalone', writable: false });

export const useSession = (): Session => useContext(SessionContext);

/** Why writes are off, in words, or undefined when they are on. */
export function readOnlyReason(s: Session): string | undefined {
  if (s.writable) return undefined;
  if (s.mode === 'kubernetes') return 'Read-only: on Kubernetes the custom resources are the source of truth. Create and revoke keys with kubectl (ApiKey resources: apikeys.tollgate.dev) or through GitOps.';
  return `Read-only: the token "${s.name}" has the read role. Sign in with a write token to create or revoke keys.`;
}
