import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { rememberRouteUrls, routeUrl } from './route-url.ts';

describe('routeUrl', () => {
  it('is the matched pattern on every read, and undefined when no route matched', async () => {
    const app = Fastify();
    rememberRouteUrls(app);
    app.get('/models/:model', async (req) => [routeUrl(req), routeUrl(req)]);
    app.setNotFoundHandler(async (req, reply) => reply.code(404).send([routeUrl(req) ?? null, routeUrl(req) ?? null]));
    expect((await app.inject({ url: '/models/gpt-4o' })).json()).toEqual(['/models/:model', '/models/:model']);
    expect((await app.inject({ url: '/nothing/here' })).json()).toEqual([null, null]);
    await app.close();
  });
});
