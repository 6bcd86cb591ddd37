import * as v from 'valibot';
import { indexTokenHash, TOKEN_KINDS } from '../engine/auth.ts';
import { operatorIn, type Instance, type OperationContext } from '../engine/context.ts';
import { formatTime } from '../conventions/clock.ts';
import { ApiError, fail } from '../conventions/errors.ts';
import { description, isStoredRef, metadata, parseInput, rfc3339, type Schema } from '../conventions/fields.ts';
import { baseResponse, keepIndexes, type ResourceDefinition } from '../engine/resource.ts';
import { REFERRER_KIND } from '../engine/references.ts';
import { INSTANCE_SCOPE, readAll, stateScopes, type Scope, type StoredRecord } from '../store.ts';

/**
 * Snapshots: every record of the instance as one JSON document (`GET /_burrow/snapshot`), and the
 * import that replaces the whole state with one (`PUT`).
 *
 * An import is checked whole, and refused with a 400 naming the first bad record (its place in the
 * document, account, kind, id and the field) when anything in it is not what the API itself would
 * have stored:
 * - accounts and kinds: every scope's account is `_instance` or an account of the snapshot, every
 *   kind one Burrow stores;
 * - resource records: the kind's stored-record schema, derived from its definition (`storedSchema`),
 *   the kind's own response must render from the record (what GET and lists answer), and every
 *   record it references must be in the snapshot, in the same account;
 * - the engine's indexes (the token index, the reverse references, the unique fields definitions
 *   declare) are not taken from the snapshot but rebuilt from the records, with the API's own code,
 *   so a snapshot cannot make a key authenticate as another or hide a reference; two records
 *   claiming one unique value (a token, a vault name) are refused;
 * - a family's own index records (kinds starting with `_`) must be objects with an id, pairs
 *   `<key> <member>` whose member is named in the id; their readers skip members that are gone.
 * The checks run first, the writes after them, all in one store transaction: all of the snapshot
 * is written, or (refused, even by a conflict found while rebuilding an index, or failed) none of
 * it, and the instance answers exactly as before.
 */

export const SNAPSHOT_FORMAT = 'burrow-snapshot';
export const SNAPSHOT_VERSION = 1;

const SnapshotBody = v.strictObject({
  format: v.literal(SNAPSHOT_FORMAT),
  version: v.literal(SNAPSHOT_VERSION),
  exported_at: v.optional(rfc3339),
  // Records are checked one by one below, between turns of the event loop.
  scopes: v.array(v.strictObject({ account: v.string(), kind: v.string(), records: v.array(v.unknown()) })),
});

/** What an import body validates as (before its records are checked). */
export type Snapshot = v.InferOutput<typeof SnapshotBody>;

/** The schema of the import body, for the OpenAPI document. */
export const SNAPSHOT_BODY: Schema = SnapshotBody;

/** Every record of the instance, scope by scope, oldest first. */
export async function exportSnapshot(instance: Instance): Promise<Snapshot> {
  const scopes = [];
  for (const scope of await stateScopes(instance.reader)) {
    scopes.push({ account: scope.account, kind: scope.kind, records: (await readAll(instance.reader, scope)).reverse() });
  }
  return { format: SNAPSHOT_FORMAT, version: SNAPSHOT_VERSION, exported_at: formatTime(instance.clock.now()), scopes };
}

/** Replaces the whole state with `body` once every record of it passed the checks above. */
export async function importSnapshot(instance: Instance, body: unknown): Promise<{ scopes: number; records: number }> {
  const snapshot = parseInput(SnapshotBody, body);
  // A kind serving another's records (service users) is checked as that kind.
  const definitions = (instance.resources as readonly ResourceDefinition<any, any, any>[]).filter((def) => def.sameRecordsAs === undefined);
  const existing = await stateScopes(instance.reader);
  return instance.perform(operatorIn(INSTANCE_SCOPE), async (ctx) => {
    const state = await checkSnapshot(ctx, definitions, snapshot);
    // The accounts as this transaction sees them too: one created since `existing` was read goes as well.
    const accounts = (await readAll(ctx.tx, { account: INSTANCE_SCOPE, kind: 'account' })).map((account) => account.id);
    for (const account of new Set([INSTANCE_SCOPE, ...accounts, ...existing.map((scope) => scope.account)])) await ctx.tx.deleteAccount(account);
    let records = 0;
    for (const { scope, record } of state.kept) {
      await ctx.tx.put(scope, record);
      if (++records % YIELD_EVERY === 0) await turn();
    }
    await rebuildIndexes(ctx, state);
    return { scopes: snapshot.scopes.length, records };
  });
}

/**
 * A long import gives other requests their turn every so many records: awaiting the store alone
 * never does (its promises resolve as microtasks, before any I/O is served).
 */
const YIELD_EVERY = 200;
const turn = () => new Promise((resolve) => setImmediate(resolve));

/** A record of the snapshot, its resource definition if it has one, and where it is (for messages, made only for one). */
class Placed {
  constructor(
    readonly scope: Scope,
    readonly record: StoredRecord,
    readonly index: number,
    readonly at: number,
    readonly def: ResourceDefinition<any, any, any> | undefined,
  ) {}

  get where(): string {
    const { account, kind } = this.scope;
    return `scopes[${this.index}].records[${this.at}] (account ${JSON.stringify(account)}, kind ${JSON.stringify(kind)}, id ${JSON.stringify((this.record as { id?: unknown } | null)?.id)})`;
  }
}

/** What the checks found: the records to write, and the resource records whose indexes to rebuild. */
interface CheckedState {
  readonly kept: readonly Placed[];
  readonly resources: readonly (Placed & { readonly def: ResourceDefinition<any, any, any> })[];
}

function refuse(where: string, message: string): never {
  fail('SNAPSHOT_INVALID', `${where}: ${message}`);
}

/** Validates `value` with `schema`, refusing with the field path inside the record. */
function checkFields(schema: Schema, value: unknown, where: string): void {
  try {
    parseInput(schema, value, 'record');
  } catch (error) {
    if (error instanceof ApiError) refuse(where, error.message);
    throw error;
  }
}

const ACCOUNT_ID = /^ac_[0-9A-Za-z]{27}$/;

/** The instance-wide kinds a snapshot may hold, and the per-account kinds that are not resources. */
const AccountRecord = v.strictObject({ id: v.pipe(v.string(), v.regex(ACCOUNT_ID, 'must be an account id (ac_…)')), created_at: rfc3339, name: description });
const UserRecord = v.strictObject({ id: v.pipe(v.string(), v.regex(/^usr_[0-9A-Za-z]{27}$/, 'must be a user id (usr_…)')), created_at: rfc3339, name: description, admin: v.boolean() });
const SequenceRecord = v.strictObject({ id: v.literal('ids'), n: v.pipe(v.number(), v.safeInteger(), v.minValue(0)), last: v.pipe(v.string(), v.regex(/^[0-9a-f]{40}$/, 'must be 40 hex digits')) });
const count = v.pipe(v.number(), v.safeInteger(), v.minValue(0));
const OutboxRecord = v.pipe(
  v.strictObject({ id: v.string(), next: count, oldest: count, dropped: count }),
  v.check((meta) => meta.oldest <= meta.next, 'oldest must not be past next'),
);
const OutboxEvent = v.looseObject({
  id: v.pipe(v.string(), v.regex(/^\d{15}$/, 'must be a 15-digit sequence number')),
  event_id: v.string(),
  event_type: v.string(),
  event_timestamp: rfc3339,
  account_id: v.string(),
  principal: v.nullable(v.record(v.string(), v.unknown())),
  object: v.unknown(),
});
const SETTINGS: Readonly<Record<string, Schema>> = {
  default_account: v.strictObject({ id: v.literal('default_account'), value: v.pipe(v.string(), v.regex(ACCOUNT_ID, 'must be an account id (ac_…)')) }),
  secrets_key: v.union([
    v.strictObject({ id: v.literal('secrets_key'), key: v.pipe(v.string(), v.base64(), v.length(44, 'must be 32 bytes of base64')) }),
    v.strictObject({ id: v.literal('secrets_key'), check: v.pipe(v.string(), v.regex(/^[0-9a-f]{64}$/, 'must be 64 hex digits')) }),
  ]),
  certificate_authority: v.strictObject({
    id: v.literal('certificate_authority'),
    certificate_pem: v.pipe(v.string(), v.startsWith('-----BEGIN CERTIFICATE-----', 'must be a PEM certificate')),
    private_key_pem: v.pipe(v.string(), v.startsWith('-----BEGIN PRIVATE KEY-----', 'must be a PEM (PKCS#8) private key')),
  }),
};
const IndexRecord = v.looseObject({ id: v.string(), member: v.optional(v.string()) });
const UniqueRecord = v.strictObject({ id: v.pipe(v.string(), v.regex(/^[a-z_]+\.[a-z_]+:/, 'must be <kind>.<field>:<value>')), record_id: v.string() });

/**
 * The stored-record schema of a kind: id, created_at, description and metadata as every resource
 * keeps them; each field of the create body as that body's schema checks it (absent or null where
 * the body may leave it out); then the fields the definition declares (`storedFields`: what the
 * record keeps in another form than the body, or that no body sets). Other fields pass as they are.
 */
function storedSchema(def: ResourceDefinition<any, any, any>): Schema {
  let schema = STORED.get(def);
  if (!schema) {
    const entries: Record<string, Schema> = {};
    for (const [name, entry] of Object.entries(createEntries(def.createSchema))) entries[name] = v.optional(v.nullable(unwrapOptional(entry)));
    Object.assign(entries, {
      id: v.pipe(v.string(), v.regex(new RegExp(`^${def.prefix}_[0-9A-Za-z]{27}$`), `must be an id of this kind (${def.prefix}_ and 27 letters or digits)`)),
      created_at: rfc3339,
      description,
      metadata,
      ...def.storedFields,
    });
    schema = v.looseObject(entries);
    STORED.set(def, schema);
  }
  return schema;
}
const STORED = new WeakMap<object, Schema>();

type SchemaNode = { type?: string; entries?: Record<string, Schema>; wrapped?: SchemaNode };
const createEntries = (schema: Schema) => (schema as unknown as SchemaNode).entries ?? {};
const unwrapOptional = (schema: Schema): Schema => {
  const node = schema as unknown as SchemaNode;
  return node.type === 'optional' || node.type === 'nullish' || node.type === 'exact_optional' ? (node.wrapped as unknown as Schema) : schema;
};

/** Checks the whole snapshot (see the module comment); answers what to write. */
async function checkSnapshot(ctx: OperationContext, definitions: readonly ResourceDefinition<any, any, any>[], snapshot: Snapshot): Promise<CheckedState> {
  const byKind = new Map(definitions.map((def) => [def.kind, def]));
  const seen = new Map<string, number>();
  const accounts = new Set<string>();
  for (const [index, scope] of snapshot.scopes.entries()) {
    const key = JSON.stringify([scope.account, scope.kind]);
    const earlier = seen.get(key);
    if (earlier !== undefined) refuse(`scopes[${index}]`, `account ${JSON.stringify(scope.account)}, kind ${JSON.stringify(scope.kind)} appears twice (also scopes[${earlier}])`);
    seen.set(key, index);
    if (scope.account === INSTANCE_SCOPE && scope.kind === 'account') for (const record of scope.records) accounts.add(String((record as { id?: unknown } | null)?.id));
  }

  // The ids of each account's resources and users, first, so that references can be checked in any order.
  const ids = new Map<string, Set<string>>();
  const placed: Placed[] = [];
  for (const [index, { account, kind, records }] of snapshot.scopes.entries()) {
    const scope = { account, kind };
    if (account !== INSTANCE_SCOPE && !accounts.has(account)) refuse(`scopes[${index}]`, `account ${JSON.stringify(account)} is not among the snapshot's accounts (${INSTANCE_SCOPE}/account)`);
    const def = account === INSTANCE_SCOPE ? undefined : byKind.get(kind);
    let known = ids.get(account);
    if (!known) ids.set(account, (known = new Set()));
    const inScope = new Set<string>();
    for (const [at, record] of (records as StoredRecord[]).entries()) {
      const item = new Placed(scope, record, index, at, def);
      if (typeof record !== 'object' || record === null || Array.isArray(record)) refuse(item.where, 'must be an object');
      if (typeof record.id !== 'string' || record.id === '') refuse(item.where, 'id: must be a non-empty string');
      if (inScope.has(record.id)) refuse(item.where, 'id: appears twice in this scope');
      inScope.add(record.id);
      if (def || kind === 'user') known.add(record.id);
      placed.push(item);
      if (placed.length % YIELD_EVERY === 0) await turn();
    }
  }

  const kept: Placed[] = [];
  const resources: CheckedState['resources'][number][] = [];
  for (const [n, item] of placed.entries()) {
    if (n % YIELD_EVERY === YIELD_EVERY - 1) await turn();
    const { scope, record, def } = item;
    const accountIds = ids.get(scope.account) ?? new Set<string>();
    if (def) {
      checkResource(ctx, def, item, accountIds);
      resources.push(item as Placed & { def: ResourceDefinition<any, any, any> });
      kept.push(item);
      continue;
    }
    if (isRebuilt(definitions, scope, record)) continue;
    checkOther(scope, record, item.where, accountIds, accounts, ids);
    kept.push(item);
  }
  return { kept, resources };
}

function checkResource(ctx: OperationContext, def: ResourceDefinition<any, any, any>, item: Placed, accountIds: ReadonlySet<string>): void {
  const { scope, record } = item;
  checkFields(storedSchema(def), record, item.where);
  const inAccount = { ...ctx, account: scope.account, principal: operatorIn(scope.account) };
  let referenced: readonly unknown[];
  try {
    def.toResponse(inAccount, record, baseResponse(inAccount, def, record as never));
    referenced = [...(def.references?.(record) ?? []), ...storedReferences(def, record)];
  } catch (error) {
    if (error instanceof ApiError) refuse(item.where, error.message);
    refuse(item.where, `is not a ${def.label} as Burrow stores one: ${(error as Error).message}`);
  }
  for (const id of referenced) {
    if (typeof id !== 'string' || !accountIds.has(id)) refuse(item.where, `references ${JSON.stringify(id)}, which is not in this account of the snapshot`);
  }
}

/** The ids in the fields a definition declares as references to other records (`storedRef`). */
function storedReferences(def: ResourceDefinition<any, any, any>, record: StoredRecord): unknown[] {
  const out: unknown[] = [];
  for (const [field, schema] of Object.entries(def.storedFields ?? {})) {
    const value = record[field];
    if (value === null || value === undefined || !isStoredRef(schema)) continue;
    if (Array.isArray(value)) out.push(...value);
    else out.push(value);
  }
  return out;
}

/**
 * Whether an index record is one the engine writes for resource records, and so rebuilt rather
 * than imported: the token index, the reverse references of resource records (those of records
 * inside others, HTTPS edge routes, are their family's and imported), and the unique fields
 * definitions declare.
 */
function isRebuilt(definitions: readonly ResourceDefinition<any, any, any>[], { account, kind }: Scope, record: StoredRecord): boolean {
  if (account === INSTANCE_SCOPE) return kind === 'token';
  if (kind === REFERRER_KIND) {
    const member = typeof record.member === 'string' ? record.member : '';
    return definitions.some((def) => member.startsWith(`${def.prefix}_`));
  }
  return kind === '_unique' && definitions.some((def) => def.unique?.some((unique) => record.id.startsWith(`${def.kind}.${unique.field}:`)));
}

/** The records of kinds that are not resources: accounts, users, settings, sequences, outboxes, index records. */
function checkOther(scope: Scope, record: StoredRecord, where: string, accountIds: ReadonlySet<string>, accounts: ReadonlySet<string>, ids: ReadonlyMap<string, ReadonlySet<string>>): void {
  const { account, kind } = scope;
  if (account === INSTANCE_SCOPE) {
    if (kind === 'account') return checkFields(AccountRecord, record, where);
    if (kind === 'setting') {
      const schema = SETTINGS[record.id];
      if (!schema) refuse(where, `id: not a setting Burrow keeps (settings: ${Object.keys(SETTINGS).join(', ')})`);
      checkFields(schema, record, where);
      if (record.id === 'default_account' && !accounts.has(String(record.value))) refuse(where, `value: account ${JSON.stringify(record.value)} is not in the snapshot`);
      return;
    }
    if (kind === '_unique') {
      checkFields(UniqueRecord, record, where);
      // Instance-wide values are held by `<account>/<id>`.
      const holder = String(record.record_id);
      const cut = holder.indexOf('/');
      if (cut < 0 || !ids.get(holder.slice(0, cut))?.has(holder.slice(cut + 1))) refuse(where, `record_id: ${JSON.stringify(holder)} is not a record of the snapshot`);
      return;
    }
    // The accounts where a server holds live agent sessions (lib/families/agents/agent-sessions.ts).
    if (kind === '_server_account') return checkFields(IndexRecord, record, where);
    refuse(where, `kind: not an instance-wide kind Burrow keeps (account, setting, token, _unique, _server_account)`);
  }
  if (kind === 'user') return checkFields(UserRecord, record, where);
  if (kind === 'id_sequence') return checkFields(SequenceRecord, record, where);
  if (kind === 'event_outbox') {
    checkFields(OutboxRecord, record, where);
    if (!accountIds.has(record.id)) refuse(where, `id: event destination ${JSON.stringify(record.id)} is not in this account of the snapshot`);
    return;
  }
  if (kind.startsWith('event_outbox@')) {
    const destination = kind.slice('event_outbox@'.length);
    if (!accountIds.has(destination)) refuse(where, `kind: event destination ${JSON.stringify(destination)} is not in this account of the snapshot`);
    return checkFields(OutboxEvent, record, where);
  }
  if (kind === '_unique') {
    checkFields(UniqueRecord, record, where);
    if (!accountIds.has(String(record.record_id))) refuse(where, `record_id: ${JSON.stringify(record.record_id)} is not in this account of the snapshot`);
    return;
  }
  if (kind.startsWith('_')) {
    checkFields(IndexRecord, record, where);
    if (typeof record.member === 'string' && !record.id.endsWith(` ${record.member}`)) refuse(where, `id: an index pair's id is "<key> <member>", and this one does not end with its member ${JSON.stringify(record.member)}`);
    return;
  }
  refuse(where, 'kind: not a kind Burrow keeps');
}

/** Writes the engine's indexes of the imported records, as the API's own writes make them. */
async function rebuildIndexes(ctx: OperationContext, state: CheckedState): Promise<void> {
  for (const [n, item] of state.resources.entries()) {
    if (n % YIELD_EVERY === YIELD_EVERY - 1) await turn();
    const { scope, record, def } = item;
    const inAccount = { ...ctx, account: scope.account, principal: operatorIn(scope.account) };
    try {
      const tokenKind = TOKEN_KINDS.find((kind) => kind === def.kind);
      if (tokenKind && typeof record.token_hash === 'string') await indexTokenHash(ctx.tx, record.token_hash, { account: scope.account, kind: tokenKind, record_id: record.id });
      await keepIndexes(inAccount, def, undefined, record as never);
    } catch (error) {
      if (error instanceof ApiError) refuse(item.where, error.message);
      throw error;
    }
  }
}
