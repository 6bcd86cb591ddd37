import { toJsonSchema } from '@valibot/to-json-schema';
import type { ControlOperation, Operation } from './context.ts';
import { MAX_FILTER_LENGTH } from '../conventions/cel.ts';
import type { Schema } from '../conventions/fields.ts';

/**
 * The OpenAPI 3.1 document, generated from the registry's operations and the same valibot
 * schemas that validate requests, so the document cannot drift from what the server accepts.
 * Checks that JSON Schema cannot express (byte limits, CIDR syntax, cross-field rules) are
 * enforced by the server and named in its error messages.
 */

type JsonObject = Record<string, unknown>;

const ERROR_ENVELOPE = {
  type: 'object',
  required: ['error_code', 'status_code', 'msg', 'details'],
  properties: {
    error_code: { type: 'string', examples: ['ERR_BURROW_215'] },
    status_code: { type: 'integer' },
    msg: { type: 'string', description: 'What was wrong and where.' },
    details: { type: 'object', additionalProperties: { type: 'string' }, properties: { operation_id: { type: 'string' } } },
  },
};

const PAGE_PARAMETERS = [
  { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 100, default: 100 } },
  { name: 'before_id', in: 'query', required: false, schema: { type: 'string' }, description: 'Return items older than this id (alias: beforeId).' },
];

const PAGE_PARAMETER_NAMES = new Set(['limit', 'before_id', 'beforeId', 'filter']);

/** A list filter beyond paging (endpoints' `id`, `url`): repeated or comma-separated values. */
function filterParameter(name: string, deprecated: boolean): JsonObject {
  const description = `Only items with one of these ${name} values (repeat the parameter or separate values with commas).`;
  const parameter = { name, in: 'query', required: false, style: 'form', explode: true, schema: { type: 'array', items: { type: 'string' } } };
  return deprecated ? { ...parameter, deprecated: true, description: `${description} Deprecated: use filter.` } : { ...parameter, description };
}

const FILTER_PARAMETER = { name: 'filter', in: 'query', required: false, schema: { type: 'string', maxLength: MAX_FILTER_LENGTH }, description: 'A CEL expression over obj, the resource as answered; only matching items are listed.' };

function bodySchema(schema: Schema): JsonObject {
  const json = toJsonSchema(schema, { errorMode: 'ignore', target: 'draft-2020-12' }) as JsonObject;
  delete json.$schema;
  return json;
}

function openApiPath(path: string): { path: string; params: string[] } {
  const params: string[] = [];
  const converted = path.replace(/:([A-Za-z_]+)/g, (_m, name: string) => {
    params.push(name);
    return `{${name}}`;
  });
  return { path: converted, params };
}

function successResponse(status: number, isList: boolean): JsonObject {
  if (status === 204) return { description: 'Done; no body.' };
  const schema = isList
    ? { type: 'object', required: ['uri', 'next_page_uri'], properties: { uri: { type: 'string' }, next_page_uri: { type: ['string', 'null'] } }, additionalProperties: true }
    : { type: 'object', additionalProperties: true };
  return { description: status === 201 ? 'Created.' : 'OK.', content: { 'application/json': { schema } } };
}

function describeOperation(op: { id: string; method: string; path: string; status: number; summary: string; body?: Schema; query?: readonly string[]; deprecatedQuery?: readonly string[] }, tag: string, security: JsonObject[]) {
  const { path, params } = openApiPath(op.path);
  const isList = op.query?.includes('before_id') ?? false;
  const operation: JsonObject = {
    operationId: op.id,
    summary: op.summary,
    tags: [tag],
    security,
    parameters: [
      ...params.map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' } })),
      ...(isList ? PAGE_PARAMETERS : []),
      ...(op.query?.includes('filter') ? [FILTER_PARAMETER] : []),
      ...(op.query ?? []).filter((name) => !PAGE_PARAMETER_NAMES.has(name)).map((name) => filterParameter(name, op.deprecatedQuery?.includes(name) ?? false)),
    ],
    responses: {
      [String(op.status)]: successResponse(op.status, isList),
      default: { description: 'Any error, in the one envelope.', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
    },
  };
  if (op.body) operation.requestBody = { required: false, content: { 'application/json': { schema: bodySchema(op.body) } } };
  return { path, method: op.method.toLowerCase(), operation };
}

/** Builds the document for these operations. `serverUrl` is the instance's base URL. */
export function openApiDocument(operations: readonly Operation[], control: readonly ControlOperation[], serverUrl: string, version: string): JsonObject {
  const paths: Record<string, Record<string, JsonObject>> = {};
  const add = ({ path, method, operation }: ReturnType<typeof describeOperation>) => {
    (paths[path] ??= {})[method] = operation;
  };
  for (const op of operations) add(describeOperation(op, op.tag, [{ apiKey: [] }]));
  for (const op of control) add(describeOperation({ ...op, path: `/_burrow${op.path}` }, 'control plane', op.open ? [] : [{ operatorToken: [] }]));
  return {
    openapi: '3.1.0',
    info: {
      title: 'Burrow API',
      version,
      description: 'An offline, embeddable implementation of a tunnel-and-ingress account management API.',
    },
    servers: [{ url: serverUrl }],
    paths,
    components: {
      schemas: { Error: ERROR_ENVELOPE },
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'An API key of the account.' },
        operatorToken: { type: 'http', scheme: 'bearer', description: 'The operator token of the control plane.' },
      },
    },
  };
}
