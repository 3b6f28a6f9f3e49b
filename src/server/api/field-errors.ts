import { isEngineError } from '../../util/engine-error.js';
import { HttpError } from '../http/http-error.js';

/**
 * Runs a service call, turning its TypeError/RangeError (a bad value the service refused; not
 * one the engine raised, a bug of ours) into a 400 `invalid_field` naming the request's field:
 * `field` itself, or the field of the first word of `field` the message contains, so
 * `{"error": {"field": "blockSize"}}` points at the right key.
 */
export async function fieldErrors<T>(fn: () => Promise<T>, field: string | Readonly<Record<string, string>>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if ((e instanceof TypeError || e instanceof RangeError) && !isEngineError(e)) {
      const hit = typeof field === 'string' ? field : Object.entries(field).find(([w]) => e.message.includes(w))?.[1];
      throw new HttpError(400, 'invalid_field', e.message, hit, { cause: e });
    }
    throw e;
  }
}
