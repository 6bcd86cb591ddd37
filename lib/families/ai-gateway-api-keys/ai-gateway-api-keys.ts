import * as v from 'valibot';
import type { OperationContext } from '../../engine/context.ts';
import { formatTime } from '../../conventions/clock.ts';
import { ApiError, type ErrorSpec } from '../../conventions/errors.ts';
import { coded, ownerId, rfc3339, sha256Hex, storedId } from '../../conventions/fields.ts';
import { hashToken } from '../../conventions/ids.ts';
import { ownerRef, resolveOwner } from '../../engine/owners.ts';
import { defineResource, refTo, scopeOf, type BaseRecord } from '../../engine/resource.ts';
import { endpointsFamily } from '../endpoints/index.ts';
import { AI_GATEWAY_API_KEYS_ERRORS as ERRORS } from './errors.ts';

/**
 * AI gateway API keys (/ai_gateway_api_keys, the vendor's Go client v8): keys that callers of an
 * AI gateway endpoint present, each scoped to one endpoint of the account. Burrow serves no AI
 * gateway traffic, so a key is a record: its token is made and shown once, on create (`""`
 * afterwards, the vendor's zero string), and kept only as its SHA-256 hash; `last_used` stays null.
 *
 * Rules, with the vendor's codes (its catalogue, 27001–27009):
 * - `endpoint_id` is required (27006; the Python client sends `""` when it is not given) and names
 *   an endpoint of the account (27002), on create and on update;
 * - `description` at most 255 bytes (27004), `metadata` at most 4096 (27005);
 * - an unknown id is 27509 ("the specified AI Gateway API Key … was not found").
 *
 * What the vendor does not say, chosen here: the token is `ng_<ksuid>_<secret>` (27007: "keys begin
 * with ng_"), `display_name` its redacted form `ng_…` and its last four characters; the endpoint
 * may be deleted while keys name it (the key keeps the Ref, as a key outlives its gateway's
 * configuration); any endpoint qualifies, since Burrow's traffic policies have no `ai-gateway`
 * action to check for (27003). `created_by` and `last_updated_by` are Refs to the owner behind the
 * call (the account's admin user when the operator calls).
 */

const ENDPOINTS = endpointsFamily.kinds.endpoints;

export interface AiGatewayApiKeyRecord extends BaseRecord {
  readonly updated_at: string;
  readonly endpoint_id: string;
  readonly token_hash: string;
  readonly display_name: string;
  readonly created_by: string;
  readonly last_updated_by: string;
}

const byteLimit = (max: number, error: ErrorSpec) =>
  v.pipe(
    v.string(),
    v.check(
      (text) => Buffer.byteLength(text, 'utf8') <= max,
      (issue) => coded(error, `must be at most ${max} bytes (got ${Buffer.byteLength(issue.input, 'utf8')})`),
    ),
  );

const endpointId = v.pipe(v.string(), v.check((id) => id !== '', coded(ERRORS.AI_GATEWAY_FIELD_REQUIRED, 'is required: the id of the endpoint (ep_…) this key is for')));

const Create = v.strictObject({
  description: v.optional(byteLimit(255, ERRORS.AI_GATEWAY_DESCRIPTION_TOO_LONG)),
  metadata: v.optional(byteLimit(4096, ERRORS.AI_GATEWAY_METADATA_TOO_LONG)),
  endpoint_id: v.optional(endpointId, ''),
});

const Update = v.strictObject({
  description: v.optional(byteLimit(255, ERRORS.AI_GATEWAY_DESCRIPTION_TOO_LONG)),
  metadata: v.optional(byteLimit(4096, ERRORS.AI_GATEWAY_METADATA_TOO_LONG)),
  endpoint_id: v.optional(endpointId),
});

/** The endpoint `id` of the caller's account, or the vendor's 27002 naming `endpoint_id`. */
async function requireEndpoint(ctx: OperationContext, id: string): Promise<string> {
  if (!(await ctx.tx.get(scopeOf(ctx, ENDPOINTS.kind), id))) throw new ApiError(ERRORS.AI_GATEWAY_ENDPOINT_NOT_FOUND, `endpoint_id: the specified endpoint, '${id}', was not found in this account`, { field: 'endpoint_id', id });
  return id;
}

/** The owner behind the call: the caller, or the account's admin user for the operator. */
const actorOf = (ctx: OperationContext) => resolveOwner(ctx, undefined);

export const aiGatewayApiKeys = defineResource<AiGatewayApiKeyRecord, typeof Create, typeof Update>({
  name: 'ai_gateway_api_keys',
  label: 'AI gateway API key',
  prefix: 'aigk',
  notFoundError: ERRORS.AI_GATEWAY_KEY_NOT_FOUND,
  createSchema: Create,
  updateSchema: Update,
  storedFields: { updated_at: rfc3339, endpoint_id: storedId(ENDPOINTS.prefix), token_hash: sha256Hex, display_name: v.string(), created_by: ownerId, last_updated_by: ownerId },
  async create(ctx, input, base) {
    const endpoint_id = await requireEndpoint(ctx, input.endpoint_id);
    const actor = await actorOf(ctx);
    const token = `ng_${ctx.ids.token(base.id)}`;
    const record: AiGatewayApiKeyRecord = {
      ...base,
      updated_at: base.created_at,
      endpoint_id,
      token_hash: hashToken(token),
      display_name: `ng_…${token.slice(-4)}`,
      created_by: actor,
      last_updated_by: actor,
    };
    return { record, reveal: { token } };
  },
  async update(ctx, record, patch) {
    const endpoint_id = patch.endpoint_id === undefined ? record.endpoint_id : await requireEndpoint(ctx, patch.endpoint_id);
    return { ...record, endpoint_id, updated_at: formatTime(ctx.clock.now()), last_updated_by: await actorOf(ctx) };
  },
  toResponse: (ctx, record, base) => ({
    ...base,
    updated_at: record.updated_at,
    created_by: ownerRef(ctx.baseUrl, record.created_by),
    last_updated_by: ownerRef(ctx.baseUrl, record.last_updated_by),
    endpoint: refTo(ctx, ENDPOINTS, record.endpoint_id),
    token: '',
    display_name: record.display_name,
    last_used: null,
  }),
});
