/**
 * Checks a JSON request body against its route's schema (route-doc.ts) before the handler runs,
 * with the API's messages naming the field and the value (`unknown field "blocksize": allowed
 * fields are …`, `field "blockSize" must be an integer between 0 and 128: got "x"`). The subset
 * of JSON Schema our bodies use: an object with `properties`, `required`,
 * `additionalProperties: false`; properties of type string (`pattern`, `description` as the hint),
 * integer (`minimum`, `maximum`), boolean, array of such strings (`minItems`, `maxItems`), and
 * object of strings.
 */
import { badField } from './http-error.js';
import type { JsonSchema } from './route-doc.js';
import type { Body } from './validate.js';

function show(v: unknown): string {
  const s = JSON.stringify(v);
  return s === undefined ? String(v) : s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

/** Throws a 400 naming the first field that breaks `schema`; a body that passes is returned as is. */
export function checkBody(schema: JsonSchema, body: Body): Body {
  const props = (schema['properties'] ?? {}) as Readonly<Record<string, JsonSchema>>;
  const allowed = Object.keys(props);
  if (schema['additionalProperties'] === false) {
    for (const k of Object.keys(body)) {
      if (!allowed.includes(k))
        throw badField(
          k,
          allowed.length === 0 ? `unknown field "${k}": this call takes no fields` : `unknown field "${k}": allowed fields are ${allowed.join(', ')}`,
        );
    }
  }
  for (const k of (schema['required'] ?? []) as readonly string[]) {
    const v = body[k];
    if (v === undefined || v === null || v === '') throw badField(k, `field "${k}" is required`);
  }
  for (const [k, p] of Object.entries(props)) {
    const v = body[k];
    if (v !== undefined && v !== null) checkValue(p, v, k);
  }
  return body;
}

function checkValue(p: JsonSchema, v: unknown, field: string): void {
  switch (p['type']) {
    case 'string': {
      if (typeof v !== 'string') throw badField(field, `field "${field}" must be a string: got ${show(v)}`);
      const pattern = p['pattern'];
      if (typeof pattern === 'string' && !new RegExp(pattern).test(v))
        throw badField(field, `field "${field}" must be ${String(p['description'] ?? `like /${pattern}/`)}: got ${show(v)}`);
      return;
    }
    case 'integer': {
      const min = p['minimum'] as number;
      const max = p['maximum'] as number;
      if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max)
        throw badField(field, `field "${field}" must be an integer between ${min} and ${max}: got ${show(v)}`);
      return;
    }
    case 'boolean':
      if (typeof v !== 'boolean') throw badField(field, `field "${field}" must be true or false: got ${show(v)}`);
      return;
    case 'array':
      if (!Array.isArray(v)) throw badField(field, `field "${field}" must be an array of strings: got ${show(v)}`);
      if (typeof p['minItems'] === 'number' && v.length < p['minItems'])
        throw badField(field, `field "${field}" must have at least ${p['minItems']} item(s): got ${v.length}`);
      if (typeof p['maxItems'] === 'number' && v.length > p['maxItems'])
        throw badField(field, `field "${field}" may have at most ${p['maxItems']} items: got ${v.length}`);
      v.forEach((x, i) => checkValue(p['items'] as JsonSchema, x, `${field}[${i}]`));
      return;
    case 'object':
      if (typeof v !== 'object' || Array.isArray(v)) throw badField(field, `field "${field}" must be an object of strings: got ${show(v)}`);
      return; // its keys and values: the handler (label rules, src/model/labels.ts)
    default:
      throw new TypeError(`schema of field "${field}": type ${show(p['type'])} is not one checkBody knows`);
  }
}
