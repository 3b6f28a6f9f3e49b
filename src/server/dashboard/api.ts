/**
 * Calls of the API under /api/v1: same origin (the server's Origin check holds), the bearer
 * token when the page has one (the install token for writes, or a read/admin token).
 */
import { state } from './state.js';

const API = '/api/v1';

/** A failed call: the server's message and the HTTP status. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

export async function api<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (state.token) headers['authorization'] = `Bearer ${state.token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const r = await fetch(API + path, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await r.text();
  const data = text ? (JSON.parse(text) as unknown) : null;
  if (!r.ok) {
    const message = (data as { error?: { message?: unknown } } | null)?.error?.message;
    throw new ApiError(typeof message === 'string' ? message : `HTTP ${r.status}`, r.status);
  }
  return data as T;
}

export function statusOf(e: unknown): number | undefined {
  return e instanceof ApiError ? e.status : undefined;
}

export function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
