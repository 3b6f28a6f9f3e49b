/**
 * A small method + path router. Patterns are literal segments and `:params`; a path segment is
 * percent-decoded after splitting, so a block CIDR travels as `10.244.0.0%2F26`.
 */
import { HttpError } from './http-error.js';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface RouteMatch<H> {
  readonly handler: H;
  readonly params: Readonly<Record<string, string>>;
  /** The pattern that matched: the `route` label of the request metrics. */
  readonly pattern: string;
  /** The route's method (GET for a HEAD request). */
  readonly method: Method;
}

/** A registered route, as `routes()` lists it. */
export interface RouteEntry<H> {
  readonly method: Method;
  readonly pattern: string;
  readonly handler: H;
}

interface Route<H> {
  readonly method: Method;
  readonly pattern: string;
  readonly segments: readonly string[];
  readonly handler: H;
}

export class Router<H> {
  readonly #routes: Route<H>[] = [];

  add(method: Method, pattern: string, handler: H): this {
    this.#routes.push({ method, pattern, segments: split(pattern), handler });
    return this;
  }

  /** Every route, in the order added. */
  routes(): RouteEntry<H>[] {
    return this.#routes.map((r) => ({ method: r.method, pattern: r.pattern, handler: r.handler }));
  }

  /** The route for a request; throws 404 for an unknown path, 405 for a known path with another method. */
  match(method: string, pathname: string): RouteMatch<H> {
    let parts: string[];
    try {
      parts = split(pathname).map((s) => decodeURIComponent(s));
    } catch {
      throw new HttpError(400, 'bad_path', `path ${JSON.stringify(pathname)} is not valid percent-encoding`);
    }
    const allowed: Method[] = [];
    for (const r of this.#routes) {
      const params = matchSegments(r.segments, parts);
      if (!params) continue;
      if (r.method === method || (method === 'HEAD' && r.method === 'GET')) return { handler: r.handler, params, pattern: r.pattern, method: r.method };
      allowed.push(r.method);
    }
    if (allowed.length > 0) {
      throw new HttpError(405, 'method_not_allowed', `${method} is not allowed on ${pathname}: use ${[...new Set(allowed)].join(', ')}`);
    }
    throw new HttpError(404, 'not_found', `no such endpoint: ${method} ${pathname}`);
  }
}

function split(path: string): string[] {
  return path.split('/').filter((s) => s !== '');
}

function matchSegments(pattern: readonly string[], parts: readonly string[]): Record<string, string> | undefined {
  if (pattern.length !== parts.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i] as string;
    const v = parts[i] as string;
    if (p.startsWith(':')) params[p.slice(1)] = v;
    else if (p !== v) return undefined;
  }
  return params;
}
