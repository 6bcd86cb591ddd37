import * as v from 'valibot';
import { operatorIn, type ControlOperationSpec, type OperationContext } from '../../engine/context.ts';
import { formatTime } from '../../conventions/clock.ts';
import { ApiError, ERRORS, fail } from '../../conventions/errors.ts';
import { NO_FIELDS, maxBytes, parseInput, rfc3339, storedRef } from '../../conventions/fields.ts';
import { absoluteUri, makeRef, type Ref } from '../../conventions/refs.ts';
import { addPair, membersOf, removePair, type PairIndex } from '../../engine/indexes.ts';
import { createRecord, defineResource, getRecord, scopeOf, type BaseRecord, type ResourceDefinition } from '../../engine/resource.ts';
import { httpsEdges, routePath, type HttpsEdgeRecord } from '../edges/index.ts';
import { EDGES_ERRORS } from '../edges/index.ts';

/**
 * Application users and sessions (/app/users, /app/sessions): the people who signed in to an
 * endpoint through an OAuth, OIDC or SAML module, and their browser sessions. The API only reads
 * and deletes them (as the vendor's); they exist because someone signed in, which in Burrow is the
 * control plane's `POST /_burrow/accounts/{account_id}/application_users` and
 * `…/application_sessions` (a test decides who signed in, from where, with which browser).
 *
 * - An application user is one identity at one identity provider: a second user with the same
 *   provider URL and `provider_user_id` is a 409.
 * - A session belongs to one user; deleting the user deletes its sessions (the user's sessions are
 *   a pair index, so that is O(sessions of the user)). A new session marks its user active and
 *   signed in at the session's start.
 * - A session's `edge` and `route` must exist when the session is made (an HTTPS edge of the
 *   account, one of its routes); they are a record of where the user signed in, so deleting the
 *   edge later leaves the session as it was.
 */

export interface ApplicationUserRecord extends BaseRecord {
  readonly identity_provider: { readonly name: string; readonly url: string };
  readonly provider_user_id: string;
  readonly username: string;
  readonly email: string;
  readonly name: string;
  readonly last_active: string;
  readonly last_login: string;
  /** `<provider url> <provider user id>`: unique per account. */
  readonly identity: string;
}

interface UserAgent {
  readonly raw: string;
  readonly browser_name: string;
  readonly browser_version: string;
  readonly device_type: string;
  readonly os_name: string;
  readonly os_version: string;
}

interface Location {
  readonly country_code: string;
  readonly latitude: number;
  readonly longitude: number;
  readonly lat_long_radius_km: number;
}

export interface ApplicationSessionRecord extends BaseRecord {
  readonly application_user_id: string;
  readonly public_url: string;
  readonly browser_session: { readonly user_agent: UserAgent; readonly ip_address: string; readonly location: Location | null };
  readonly last_active: string;
  readonly expires_at: string;
  readonly endpoint_id: string | null;
  readonly edge_id: string | null;
  readonly route_id: string | null;
}

/** Sessions last a day unless the test says otherwise. */
const SESSION_SECONDS = 24 * 60 * 60;

const text = v.pipe(v.string(), maxBytes(255));
const absoluteUrl = v.pipe(
  v.string(),
  maxBytes(2048),
  v.check((value) => URL.canParse(value) && new URL(value).host !== '', (issue) => `must be an absolute URL such as https://app.example.com (got ${JSON.stringify(issue.input)})`),
);

const ApplicationUserCreate = v.strictObject({
  identity_provider: v.optional(v.strictObject({ name: text, url: absoluteUrl })),
  provider_user_id: v.optional(v.pipe(text, v.minLength(1, 'must not be empty'))),
  username: v.optional(text),
  email: v.optional(text),
  name: v.optional(text),
});

const ApplicationSessionCreate = v.strictObject({
  application_user_id: v.string(),
  public_url: absoluteUrl,
  user_agent: v.optional(
    v.strictObject({
      raw: v.pipe(v.string(), maxBytes(1024)),
      browser_name: v.optional(text),
      browser_version: v.optional(text),
      device_type: v.optional(text),
      os_name: v.optional(text),
      os_version: v.optional(text),
    }),
  ),
  ip_address: v.optional(v.pipe(v.string(), v.ip('must be an IPv4 or IPv6 address'))),
  location: v.optional(
    v.strictObject({
      country_code: v.optional(v.pipe(v.string(), v.regex(/^[A-Z]{2}$/, 'must be an ISO 3166 country code such as US'))),
      latitude: v.optional(v.pipe(v.number(), v.minValue(-90), v.maxValue(90))),
      longitude: v.optional(v.pipe(v.number(), v.minValue(-180), v.maxValue(180))),
      lat_long_radius_km: v.optional(v.pipe(v.number(), v.minValue(0))),
    }),
  ),
  expires_at: v.optional(rfc3339),
  endpoint_id: v.optional(v.pipe(v.string(), v.regex(/^ep_[0-9A-Za-z]+$/, 'must be an endpoint id (ep_…)'))),
  edge_id: v.optional(v.string()),
  route_id: v.optional(v.string()),
});

/** What both kinds declare alike: a sign-in makes them (here the control plane's create); the API reads and deletes them. */
const madeBySignIns = { operations: ['get', 'list', 'delete'], updateSchema: NO_FIELDS } as const;

const sessionsOfUser = (ctx: OperationContext): PairIndex => ({ account: ctx.account, kind: '_application_user_session' });

export const applicationUsers = defineResource<ApplicationUserRecord, typeof ApplicationUserCreate, typeof NO_FIELDS>({
  name: 'application_users',
  label: 'application user',
  prefix: 'apu',
  path: '/app/users',
  ...madeBySignIns,
  createSchema: ApplicationUserCreate,
  storedFields: { last_active: rfc3339, last_login: rfc3339, identity: v.string() },
  unique: [
    {
      field: 'identity',
      conflict: (identity, holder) => new ApiError(ERRORS.CONFLICT, `provider_user_id: application user '${holder}' is already this identity (${identity})`, { id: holder }),
    },
  ],
  create(_ctx, input, base) {
    const identity_provider = input.identity_provider ?? { name: 'Google', url: 'https://accounts.google.com' };
    const provider_user_id = input.provider_user_id ?? base.id.slice(base.id.indexOf('_') + 1);
    return {
      ...base,
      identity_provider,
      provider_user_id,
      username: input.username ?? '',
      email: input.email ?? '',
      name: input.name ?? '',
      last_active: base.created_at,
      last_login: base.created_at,
      identity: `${identity_provider.url} ${provider_user_id}`,
    };
  },
  toResponse: (_ctx, record, base) => ({
    id: base.id,
    uri: base.uri,
    identity_provider: { ...record.identity_provider },
    provider_user_id: record.provider_user_id,
    username: record.username,
    email: record.email,
    name: record.name,
    created_at: base.created_at,
    last_active: record.last_active,
    last_login: record.last_login,
  }),
  async beforeDelete(ctx, record) {
    for (const sessionId of await membersOf(ctx.tx, sessionsOfUser(ctx), record.id)) {
      await ctx.tx.delete(scopeOf(ctx, applicationSessions.kind), sessionId);
      await removePair(ctx.tx, sessionsOfUser(ctx), record.id, sessionId);
    }
  },
});

/** The edge and route a new session names, checked; 404 for ones the account does not have. */
async function sessionPlace(ctx: OperationContext, input: v.InferOutput<typeof ApplicationSessionCreate>): Promise<{ edge_id: string | null; route_id: string | null }> {
  if (input.route_id !== undefined && input.edge_id === undefined) fail('INVALID_FIELD', 'route_id: needs edge_id (the HTTPS edge the route belongs to)');
  if (input.edge_id === undefined) return { edge_id: null, route_id: null };
  const edge: HttpsEdgeRecord = await getRecord(ctx, httpsEdges, input.edge_id);
  if (input.route_id !== undefined && !edge.routes.some((route) => route.id === input.route_id)) {
    throw new ApiError(EDGES_ERRORS.EDGE_ROUTE_NOT_FOUND, `route_id: HTTPS edge '${edge.id}' has no route '${input.route_id}'`, { id: input.route_id });
  }
  return { edge_id: edge.id, route_id: input.route_id ?? null };
}

export const applicationSessions = defineResource<ApplicationSessionRecord, typeof ApplicationSessionCreate, typeof NO_FIELDS>({
  name: 'application_sessions',
  label: 'application session',
  prefix: 'aps',
  path: '/app/sessions',
  ...madeBySignIns,
  createSchema: ApplicationSessionCreate,
  storedFields: {
    application_user_id: storedRef('apu'),
    browser_session: v.looseObject({ user_agent: v.record(v.string(), v.unknown()), ip_address: v.string(), location: v.nullable(v.record(v.string(), v.unknown())) }),
    last_active: rfc3339,
    expires_at: rfc3339,
  },
  async create(ctx, input, base) {
    const user = (await ctx.tx.get(scopeOf(ctx, applicationUsers.kind), input.application_user_id)) as ApplicationUserRecord | undefined;
    if (!user) fail('NOT_FOUND', `application_user_id: application user '${input.application_user_id}' was not found`, { id: input.application_user_id });
    const place = await sessionPlace(ctx, input);
    const expires_at = input.expires_at !== undefined ? formatTime(new Date(input.expires_at)) : formatTime(new Date(new Date(base.created_at).getTime() + SESSION_SECONDS * 1000));
    if (expires_at <= base.created_at) fail('INVALID_FIELD', `expires_at: must be after the session starts (${base.created_at})`);
    const agent = input.user_agent;
    await addPair(ctx.tx, sessionsOfUser(ctx), user.id, base.id);
    await ctx.tx.put(scopeOf(ctx, applicationUsers.kind), { ...user, last_active: base.created_at, last_login: base.created_at });
    return {
      ...base,
      application_user_id: user.id,
      public_url: input.public_url,
      browser_session: {
        user_agent: {
          raw: agent?.raw ?? '',
          browser_name: agent?.browser_name ?? '',
          browser_version: agent?.browser_version ?? '',
          device_type: agent?.device_type ?? '',
          os_name: agent?.os_name ?? '',
          os_version: agent?.os_version ?? '',
        },
        ip_address: input.ip_address ?? '127.0.0.1',
        location: input.location
          ? { country_code: input.location.country_code ?? '', latitude: input.location.latitude ?? 0, longitude: input.location.longitude ?? 0, lat_long_radius_km: input.location.lat_long_radius_km ?? 0 }
          : null,
      },
      last_active: base.created_at,
      expires_at,
      endpoint_id: input.endpoint_id ?? null,
      ...place,
    };
  },
  toResponse: (ctx, record, base) => {
    const ref = (path: string, id: string | null): Ref | null => (id === null ? null : makeRef(ctx.baseUrl, path, id));
    return {
      id: base.id,
      uri: base.uri,
      public_url: record.public_url,
      browser_session: {
        user_agent: { ...record.browser_session.user_agent },
        ip_address: record.browser_session.ip_address,
        location: record.browser_session.location ? { ...record.browser_session.location } : null,
      },
      application_user: makeRef(ctx.baseUrl, applicationUsers.path, record.application_user_id),
      created_at: base.created_at,
      last_active: record.last_active,
      expires_at: record.expires_at,
      endpoint: ref('/endpoints', record.endpoint_id),
      edge: ref(httpsEdges.path, record.edge_id),
      route: record.edge_id !== null && record.route_id !== null ? { id: record.route_id, uri: absoluteUri(ctx.baseUrl, routePath({ id: record.route_id, edge_id: record.edge_id })) } : null,
    };
  },
  async beforeDelete(ctx, record) {
    await removePair(ctx.tx, sessionsOfUser(ctx), record.application_user_id, record.id);
  },
});

/** A control-plane create of `def` under an account, through the definition's own create schema. */
function controlCreate<R extends BaseRecord>(def: ResourceDefinition<R>, path: string, summary: string): ControlOperationSpec {
  return {
    id: `control.${path}.create`,
    route: `POST /accounts/:account_id/${path}`,
    status: 201,
    body: def.createSchema,
    summary,
    async run(instance, input, meta) {
      const account = input.params.account_id!;
      return instance.perform(operatorIn(account), (ctx) => createRecord(ctx, def, parseInput(def.createSchema, input.body ?? {}) as Record<string, unknown>), instance.baseUrl ?? meta.baseUrl);
    },
  };
}

/** Control plane: someone signs in (an application user), and opens a browser session. */
export const APPLICATION_CONTROL_OPERATIONS: readonly ControlOperationSpec[] = [
  controlCreate(applicationUsers, 'application_users', 'Create an application user (someone who signed in through an OAuth, OIDC or SAML module), as GET /app/users/{id} answers it'),
  controlCreate(applicationSessions, 'application_sessions', 'Open a browser session of an application user (marks the user active), as GET /app/sessions/{id} answers it'),
];
