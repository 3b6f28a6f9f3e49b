/**
 * What a route takes and answers, as data: the one table (src/server/api/api-docs.ts) that the
 * server validates request bodies against (checkBody, before the handler runs) and that the
 * OpenAPI document is generated from (src/server/api/openapi-document.ts). Schemas are JSON
 * Schema (draft 2020-12, the dialect of OpenAPI 3.1).
 */
export type JsonSchema = Readonly<Record<string, unknown>>;

export interface QueryParamDoc {
  readonly description: string;
  readonly schema: JsonSchema;
  readonly required?: boolean;
}

export interface RouteDoc {
  readonly summary: string;
  /** The group it is listed under (pools, nodes, …). */
  readonly tag: string;
  readonly description?: string;
  /** Path parameters (`:name` in the pattern) → what they are. */
  readonly params?: Readonly<Record<string, string>>;
  readonly query?: Readonly<Record<string, QueryParamDoc>>;
  /** The JSON object body (a mutating route); checked by the server before the handler runs. */
  readonly body?: JsonSchema;
  /** The success answer: a JSON schema, or another content type (the dashboard, /metrics). */
  readonly response: JsonSchema | { readonly contentType: string; readonly schema?: JsonSchema };
  /** Error statuses the route answers beside the common ones (400, 401, 403, 5xx). */
  readonly errors?: readonly number[];
}

/** The key of a route in the table: "POST /api/v1/pools". */
export function routeKey(method: string, pattern: string): string {
  return `${method} ${pattern}`;
}
