import * as v from 'valibot';
import { coded } from '../../conventions/fields.ts';
import type { BaseRecord } from '../../engine/resource.ts';
import { backendCommonFields, defineBackend, httpHeaderMap } from './shared.ts';
import { BACKENDS_ERRORS } from './errors.ts';

/**
 * HTTP response backends (/backends/http_response): answer every request with a fixed status,
 * headers and body. Header names are stored lower-cased (HTTP names are case-insensitive; the
 * vendor's examples show them lower-cased). Defaults: status_code 200, body "", headers {}.
 */

export interface HttpResponseBackendRecord extends BaseRecord {
  readonly body: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly status_code: number;
}

const statusCode = v.pipe(
  v.number(),
  v.check(
    (code) => Number.isInteger(code) && code >= 100 && code <= 599,
    (issue) => coded(BACKENDS_ERRORS.BACKEND_STATUS_CODE_INVALID, `must be an HTTP status code, an integer from 100 to 599 (got ${issue.input})`),
  ),
);

const HttpResponseCreate = v.strictObject({
  ...backendCommonFields,
  body: v.optional(v.string()),
  headers: v.optional(v.nullable(httpHeaderMap)),
  status_code: v.optional(statusCode),
});
const HttpResponseUpdate = HttpResponseCreate;

const lowerCaseNames = (headers: Readonly<Record<string, string>> | null): Record<string, string> =>
  Object.fromEntries(Object.entries(headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]));

export const httpResponseBackends = defineBackend<HttpResponseBackendRecord, typeof HttpResponseCreate, typeof HttpResponseUpdate>('bkdhr', {
  createSchema: HttpResponseCreate,
  updateSchema: HttpResponseUpdate,
  create: (_ctx, input, base) => ({
    ...base,
    body: input.body ?? '',
    headers: lowerCaseNames(input.headers ?? null),
    status_code: input.status_code ?? 200,
  }),
  update: (_ctx, record, patch) => ({
    ...record,
    ...(patch.body === undefined ? {} : { body: patch.body }),
    ...(patch.headers === undefined ? {} : { headers: lowerCaseNames(patch.headers) }),
    ...(patch.status_code === undefined ? {} : { status_code: patch.status_code }),
  }),
  toResponse: (_ctx, record, base) => ({ ...base, body: record.body, headers: { ...record.headers }, status_code: record.status_code }),
});
