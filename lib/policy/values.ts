import { formatTime } from '../conventions/clock.ts';

/**
 * CEL values (bigint ints, Date timestamps, durations, Uint8Array bytes, arrays, plain-object or Map maps)
 * in and out of JSON and text, as interpolation, `json.*`, `log` and set-vars need them.
 */

const isDuration = (value: unknown) => !!value && typeof value === 'object' && Object.prototype.toString.call(value) === '[object google.protobuf.Duration]';

/** A CEL value as JSON-compatible data: ints as numbers, timestamps as RFC 3339, bytes as base64. */
export function celToJson(value: unknown): unknown {
  if (typeof value === 'bigint') return Number(value);
  if (value instanceof Date) return formatTime(value);
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  if (Array.isArray(value)) return value.map(celToJson);
  // A duration as protobuf's JSON writes one: `86400s`, `1.5s`.
  if (isDuration(value)) return String(value);
  if (value instanceof Map) return Object.fromEntries([...value].map(([k, v]) => [String(k), celToJson(v)]));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, celToJson(v)]));
  return value;
}

/** A CEL value as text inside a string: strings as they are, lists and maps as JSON, null as "null". */
export function celToText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'bigint' || typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value instanceof Date) return formatTime(value);
  if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8');
  if (isDuration(value)) return String(value);
  return JSON.stringify(celToJson(value));
}
