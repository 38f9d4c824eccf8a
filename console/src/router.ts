// Hash routes (#/keys, #/projects/acme/web): the page survives a reload of its own address without the server
// knowing the console's paths, and nothing secret is ever in the URL.
import { useEffect, useState } from 'preact/hooks';

export type Route =
  | { page: 'overview' }
  | { page: 'projects' }
  | { page: 'project'; organization: string; project: string }
  | { page: 'keys' }
  | { page: 'models' }
  | { page: 'upstreams' }
  | { page: 'requests' };

export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  switch (parts[0]) {
    case 'projects':
      return parts.length >= 3 ? { page: 'project', organization: parts[1], project: parts[2] } : { page: 'projects' };
    case 'keys':
    case 'models':
    case 'upstreams':
    case 'requests':
      return { page: parts[0] };
    default:
      return { page: 'overview' };
  }
}

export function href(route: Route): string {
  if (route.page === 'project') return `#/projects/${encodeURIComponent(route.organization)}/${encodeURIComponent(route.project)}`;
  return `#/${route.page}`;
}

export function useRoute(): Route {
  const [route, setRoute] = useState<Route>(() => parseRoute(location.hash));
  useEffect(() => {
    const onHash = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);
  return route;
}
