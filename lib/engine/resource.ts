import * as v from 'valibot';
import type { Caller, Operation, OperationContext, OperationInput, ResourceKind, Services } from './context.ts';
import { formatTime } from '../conventions/clock.ts';
import { ApiError, fail, notFound, type ErrorSpec } from '../conventions/errors.ts';
import { NO_FIELDS, parseInput, type Schema } from '../conventions/fields.ts';
import { FILTERED_PAGING_PARAMS, listEnvelope, parsePageRequest, type PageRequest } from '../conventions/paging.ts';
import { absoluteUri, makeRef, type Ref } from '../conventions/refs.ts';
import { claimUnique, releaseUnique } from './indexes.ts';
import { filteredPage, scanQuery } from './list-filter.ts';
import { referrerPage, refuseIfReferenced, updateReferences } from './references.ts';
import { readAll, type PageQuery, type Read, type StoredRecord } from '../store.ts';

/**
 * The generic resource engine. A resource kind is a definition (prefix, path, list key, schemas,
 * response shape and rule hooks); create/get/list/update/delete come from here, so no family
 * carries its own copy of CRUD.
 *
 * Every record stores `id`, `created_at`, `description` and `metadata` (both `""` when unset);
 * hooks add the rest. Events `<event>_created/updated/deleted.v0` are emitted for every successful
 * mutation of a kind that names an `event` object.
 */

/** The fields every stored resource has. */
export interface BaseRecord {
  readonly id: string;
  readonly created_at: string;
  readonly description: string;
  readonly metadata: string;
  readonly [field: string]: unknown;
}

type Awaitable<T> = T | Promise<T>;
type CrudOperation = 'create' | 'get' | 'list' | 'update' | 'delete';

/** What a schema's parse yields; `any` for a definition that did not give its schema's type. */
export type Parsed<S extends Schema> = Schema extends S ? any : v.InferOutput<S>;

/**
 * A resource kind. `Create`/`Update` are the types of its body schemas: hooks receive what they
 * parse to, and the typed in-process client accepts what they accept.
 */
export interface ResourceDefinition<R extends BaseRecord = BaseRecord, Create extends Schema = Schema, Update extends Schema = Schema> extends ResourceKind {
  /** Event object name (`api_key` → `api_key_created.v0`); omit for kinds without audit events. */
  readonly event?: string;
  /** Error for unknown ids (defaults to the generic 404). */
  readonly notFoundError?: ErrorSpec;
  /** Error for deleting a record that others still reference (defaults to the generic 409). */
  readonly inUseError?: ErrorSpec;
  /** Which CRUD operations exist (all by default). */
  readonly operations?: readonly CrudOperation[];
  /**
   * The list takes the vendor's `filter` parameter, a CEL expression over each record's response
   * (`obj`); true where the vendor's newer clients send it (lib/engine/list-filter.ts).
   */
  readonly filterable?: boolean;
  readonly createSchema: Create;
  readonly updateSchema: Update;
  /**
   * The record's fields as a snapshot import checks them (lib/control/snapshot.ts), where the create body's
   * schema does not say it: fields the record keeps in another form than the body sends, and fields
   * no body sets (hashes, derived values, links). id, created_at, description and metadata, and the
   * body's other fields, are checked without being listed here.
   */
  readonly storedFields?: Readonly<Record<string, Schema>>;
  /**
   * Slow preparation from the validated input and committed state or services (key generation,
   * the instance's CA), run before the transaction opens; its result is `create`'s `prepared`
   * argument.
   */
  prepareCreate?(input: Parsed<Create>, caller: Caller): Promise<unknown>;
  /** Builds the record's own fields from the validated input (rules, references, defaults). */
  create(ctx: OperationContext, input: Parsed<Create>, base: BaseRecord, prepared?: unknown): Awaitable<{ record: R; reveal?: Record<string, unknown> } | R>;
  /** Applies a validated patch; returns the new record. Fields not sent stay unchanged. */
  update?(ctx: OperationContext, record: R, patch: Parsed<Update>, prepared?: unknown): Awaitable<R>;
  /** As `prepareCreate`, for a patch: its result is `update`'s `prepared` argument. */
  prepareUpdate?(patch: Parsed<Update>, caller: Caller): Promise<unknown>;
  /** The response shape (never secrets); `base` holds id, uri, created_at, description, metadata. */
  toResponse(ctx: OperationContext, record: R, base: BaseResponse): Record<string, unknown>;
  /**
   * Ids of the records this record points at (policies, backends, CAs …). The engine keeps the
   * reverse index (lib/engine/references.ts) and refuses to delete a record that is still referenced.
   */
  references?(record: R): readonly string[];
  /**
   * Fields no two records of the kind in one account may share (an SSH key's fingerprint). The
   * engine keeps a unique index of each (lib/engine/indexes.ts), so finding a record by one is one read.
   */
  readonly unique?: readonly UniqueField<R>[];
  /**
   * Commands on one record: `POST <path>/:id/<name>` with an empty body, answered 204 (the agent
   * commands of tunnel sessions), or `DELETE <path>/:id/<name>` (a reserved domain's certificate).
   * The engine loads the record; the command acts on it.
   */
  readonly commands?: Readonly<Record<string, RecordCommand<R>>>;
  /** Refuses a delete or cleans up what the record owns; runs after the reference check. */
  beforeDelete?(ctx: OperationContext, record: R): Awaitable<void>;
  /**
   * A list of this kind under one record of a kind it references (`GET /vaults/:id/secrets`):
   * `GET <parent path>/:id/<segment>`, operation `<parent name>.<operation>`, answering the records
   * of this kind that reference that record, newest first, paged as the kind's own list (through
   * the reverse-reference index, so a page costs O(limit)).
   */
  readonly listedUnder?: { readonly parent: ResourceDefinition<any, any, any>; readonly segment: string; readonly operation: string };
  /**
   * The kind whose records this one serves under another name and path (the vendor renamed bot
   * users to service users and serves both): same store kind, id prefix and rules. The registry
   * finds records by store kind or id prefix through that kind alone, and snapshots check them
   * with its definition.
   */
  readonly sameRecordsAs?: ResourceDefinition<any, any, any>;
}

/** A field whose value identifies one record of its kind in an account. */
export interface UniqueField<R extends BaseRecord> {
  readonly field: keyof R & string;
  /** The error when another record (`holderId`) has the value already. */
  conflict(value: string, holderId: string): ApiError;
}

/** A command on one record of a kind (see `ResourceDefinition.commands`). */
export interface RecordCommand<R extends BaseRecord> {
  readonly summary: string;
  /** `POST` with `{}` (the default: agent commands) or `DELETE` without a body (detaching a part of the record). */
  readonly method?: 'POST' | 'DELETE';
  /** The verb of the operation id `<kind name>.<verb>` (default: the command's name). */
  readonly verb?: string;
  /**
   * Acts before the write transaction opens, on the record as last committed, and answers true
   * when that was the whole command (`run` does not follow): relaying it to a live agent over the
   * network, which must neither hold a transaction open nor run twice when a store re-runs one.
   */
  relay?(services: Services, record: R): Promise<boolean>;
  run(ctx: OperationContext, record: R): Promise<void>;
}

/**
 * A definition as a family writes it: `kind` defaults to the singular of `name` (`storeKindOf`),
 * `path` to `/<name>` and `listKey` to `<name>`, as for most kinds.
 */
export type ResourceDefinitionInput<R extends BaseRecord, Create extends Schema, Update extends Schema> = Omit<ResourceDefinition<R, Create, Update>, 'kind' | 'path' | 'listKey'> &
  Partial<Pick<ResourceDefinition<R, Create, Update>, 'kind' | 'path' | 'listKey'>>;

/**
 * The store kind of a kind named `name`: its singular (`api_keys` → `api_key`, `ip_policies` →
 * `ip_policy`, `agent_ingresses` → `agent_ingress`). Records are stored under it, so a kind's store
 * kind is part of the stored format (test/engine/store-kinds.test.ts lists them).
 */
export function storeKindOf(name: string): string {
  if (name.endsWith('ies')) return `${name.slice(0, -3)}y`;
  if (name.endsWith('sses')) return name.slice(0, -2);
  return name.replace(/s$/, '');
}

export function defineResource<R extends BaseRecord, Create extends Schema = Schema, Update extends Schema = Schema>(
  definition: ResourceDefinitionInput<R, Create, Update>,
): ResourceDefinition<R, Create, Update> {
  return { ...definition, kind: definition.kind ?? storeKindOf(definition.name), path: definition.path ?? `/${definition.name}`, listKey: definition.listKey ?? definition.name };
}

/** The store scope of a kind in the caller's account. */
export function scopeOf(ctx: OperationContext, kind: string) {
  return { account: ctx.account, kind };
}

/** Reads a record of `def` in the caller's account, or throws the kind's 404. */
export async function getRecord<R extends BaseRecord>(ctx: OperationContext, def: ResourceDefinition<R>, id: string): Promise<R> {
  const record = await ctx.tx.get(scopeOf(ctx, def.kind), id);
  if (!record) notFound(def.label, id, def.notFoundError);
  return record as unknown as R;
}

/** `{ id, uri }` of a record of `def`. */
export function refTo(ctx: OperationContext, def: Pick<ResourceDefinition, 'path'>, id: string): Ref {
  return makeRef(ctx.baseUrl, def.path, id);
}

/** The common leading response fields. */
export interface BaseResponse {
  id: string;
  uri: string;
  created_at: string;
  description: string;
  metadata: string;
}

/** The common leading response fields of a record of `def`: id, uri, created_at, description, metadata. */
export function baseResponse(ctx: OperationContext, def: Pick<ResourceDefinition, 'path'>, record: BaseRecord): BaseResponse {
  return spreadable({
    id: record.id,
    uri: absoluteUri(ctx.baseUrl, `${def.path}/${record.id}`),
    created_at: record.created_at,
    description: record.description,
    metadata: record.metadata,
  });
}

/**
 * Marks a fresh object that definitions spread (`{ ...base, field }`) as non-extensible. On Node 20
 * (V8 11.3) spreading an extensible plain object and adding fields costs about 3 µs per added
 * field, while the same spread of a non-extensible object takes a tenth of that: this was the
 * largest single cost of a GET and of a POST.
 */
function spreadable<T extends object>(value: T): T {
  return Object.preventExtensions(value);
}

/**
 * Keeps the engine's indexes of a record of `def` in step with a write: the reverse references
 * and the unique fields. `before` is absent on create, `after` on delete. Throws the definition's
 * conflict error when a unique value is taken.
 */
export async function keepIndexes<R extends BaseRecord>(ctx: OperationContext, def: ResourceDefinition<R>, before: R | undefined, after: R | undefined): Promise<void> {
  const id = (after ?? before)!.id;
  for (const { field, conflict } of def.unique ?? []) {
    const previous = before?.[field] as string | undefined;
    const next = after?.[field] as string | undefined;
    if (previous === next) continue;
    if (previous !== undefined) await releaseUnique(ctx.tx, ctx.account, def.kind, field, previous, id);
    if (next === undefined) continue;
    const holder = await claimUnique(ctx.tx, ctx.account, def.kind, field, next, id);
    if (holder !== undefined) throw conflict(next, holder);
  }
  await updateReferences(ctx, { id, label: def.label }, (before && def.references?.(before)) ?? [], (after && def.references?.(after)) ?? []);
}

/** Every record of a kind in the caller's account (O(n)): only where every one of them is the answer. */
export async function allRecords<R extends StoredRecord = BaseRecord>(ctx: OperationContext, kind: string): Promise<R[]> {
  return (await readAll(ctx.tx, scopeOf(ctx, kind))) as unknown as R[];
}

/**
 * Drops `id` (and parent path parameters) from a PATCH body when they equal the path: the official
 * TS client sends them. A different value is a 400.
 */
export function stripPathIds(body: unknown, params: Readonly<Record<string, string>>): unknown {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return body;
  const copy: Record<string, unknown> = { ...(body as Record<string, unknown>) };
  for (const [name, value] of Object.entries(params)) {
    if (!(name in copy)) continue;
    if (copy[name] !== value) {
      fail('INVALID_FIELD', `${name}: must equal the id in the path ('${value}') or be left out (got ${JSON.stringify(copy[name])})`);
    }
    delete copy[name];
  }
  return copy;
}

function unwrapCreated<R>(result: { record: R; reveal?: Record<string, unknown> } | R): { record: R; reveal?: Record<string, unknown> } {
  return typeof result === 'object' && result !== null && 'record' in result && !('id' in result)
    ? (result as { record: R; reveal?: Record<string, unknown> })
    : { record: result as R };
}

/** The response of a record of `def`. */
export function respond<R extends BaseRecord>(ctx: OperationContext, def: ResourceDefinition<R>, record: R): Record<string, unknown> {
  return def.toResponse(ctx, record, baseResponse(ctx, def, record));
}

/**
 * What follows a write of a record of `def`: its indexes (where it has unique fields or
 * references), then the reactions other families registered to it (lib/engine/family.ts). A kind with
 * neither costs one call.
 */
async function afterWrite(ctx: OperationContext, def: ResourceDefinition<any>, on: 'created' | 'updated' | 'deleted', before: BaseRecord | undefined, after: BaseRecord | undefined): Promise<void> {
  if (def.unique || def.references) await keepIndexes(ctx, def, before, after);
  for (const reaction of ctx.services.kinds.reactionsTo(def.kind)) if (reaction.on.includes(on)) await reaction.run(ctx, before, after);
}

/** Emits `<event>_<action>.v0` for a definition that has audit events. */
export function emitAudit(ctx: OperationContext, def: ResourceDefinition<any>, action: 'created' | 'updated' | 'deleted', object: unknown): void {
  if (def.event) ctx.emit(`${def.event}_${action}.v0`, object);
}

/**
 * Creates a record of `def` from a validated create body (`parseInput(def.createSchema, body)`), as
 * POST does: builds the record, stores it with its indexes, runs the reactions and emits
 * `<event>_created`. Answers the response (with revealed secrets). `prepared` is what
 * `prepareCreate` made before the transaction (or what a caller decided there).
 */
export async function createRecord<R extends BaseRecord>(ctx: OperationContext, def: ResourceDefinition<R>, parsed: Record<string, unknown>, prepared?: unknown): Promise<Record<string, unknown>> {
  const base: BaseRecord = spreadable({
    id: ctx.ids.id(def.prefix),
    created_at: formatTime(ctx.clock.now()),
    description: (parsed.description as string | undefined) ?? '',
    metadata: (parsed.metadata as string | undefined) ?? '',
  });
  const { record, reveal } = unwrapCreated(await def.create(ctx, parsed, base, prepared));
  await ctx.tx.put(scopeOf(ctx, def.kind), record);
  await afterWrite(ctx, def, 'created', undefined, record);
  const response = respond(ctx, def, record);
  emitAudit(ctx, def, 'created', response);
  return reveal ? Object.assign({}, response, reveal) : response;
}

/**
 * Applies a PATCH body to the record `id` of `def`: description, metadata, then the definition's
 * rules. The record is read before the body is checked, so a foreign or unknown id is a 404
 * whatever the body holds.
 */
export async function updateRecord<R extends BaseRecord>(ctx: OperationContext, def: ResourceDefinition<R>, id: string, body: unknown, prepared?: unknown): Promise<Record<string, unknown>> {
  const current = await getRecord(ctx, def, id);
  const patch = parseInput(def.updateSchema, body ?? {}) as Record<string, unknown>;
  let next: R = { ...current };
  if (patch.description !== undefined) next = { ...next, description: patch.description };
  if (patch.metadata !== undefined) next = { ...next, metadata: patch.metadata };
  if (def.update) next = await def.update(ctx, next, patch, prepared);
  return replaceRecord(ctx, def, current, next);
}

/** Stores `next` in place of `current` with its indexes and emits `<event>_updated`; answers the response. */
export async function replaceRecord<R extends BaseRecord>(ctx: OperationContext, def: ResourceDefinition<R>, current: R, next: R): Promise<Record<string, unknown>> {
  await ctx.tx.put(scopeOf(ctx, def.kind), next);
  await afterWrite(ctx, def, 'updated', current, next);
  const response = respond(ctx, def, next);
  emitAudit(ctx, def, 'updated', response);
  return response;
}

/** Deletes the record `id` of `def` unless something references it; the definition cleans up first. */
export async function deleteRecord<R extends BaseRecord>(ctx: OperationContext, def: ResourceDefinition<R>, id: string): Promise<void> {
  const record = await getRecord(ctx, def, id);
  await refuseIfReferenced(ctx, def.label, record.id, def.inUseError);
  await def.beforeDelete?.(ctx, record);
  await ctx.tx.delete(scopeOf(ctx, def.kind), record.id);
  await afterWrite(ctx, def, 'deleted', record, undefined);
  emitAudit(ctx, def, 'deleted', respond(ctx, def, record));
}

/** One page of the records of `def`, newest first, in the list envelope. */
export async function listRecords<R extends BaseRecord>(ctx: OperationContext, def: ResourceDefinition<R>, query: OperationInput['query']): Promise<Record<string, unknown>> {
  const page = listPageRequest(def, query);
  if (page.filter !== undefined) {
    const { items, lastId, hasMore } = await filteredPage<R>(ctx, scopeOf(ctx, def.kind), { ...page, filter: page.filter }, (record) => respond(ctx, def, record));
    return listEnvelope(def.listKey, items, absoluteUri(ctx.baseUrl, def.path), page, lastId, hasMore);
  }
  const rows = await ctx.tx.page(scopeOf(ctx, def.kind), firstListQuery(page));
  const items = rows.slice(0, page.limit) as unknown as R[];
  return listEnvelope(
    def.listKey,
    items.map((record) => respond(ctx, def, record)),
    absoluteUri(ctx.baseUrl, def.path),
    page,
    items[items.length - 1]?.id,
    rows.length > page.limit,
  );
}

const listPageRequest = (def: ResourceDefinition<any, any, any>, query: OperationInput['query']) =>
  def.filterable ? parsePageRequest(query, FILTERED_PAGING_PARAMS) : parsePageRequest(query);

/** The store page a list reads first: one record more than the page (to know whether more follow), or a filter's first scan. */
const firstListQuery = (page: PageRequest): PageQuery =>
  page.filter === undefined ? { ...(page.beforeId === undefined ? {} : { beforeId: page.beforeId }), limit: page.limit + 1 } : scanQuery(page.beforeId);

/** A list's first read (Operation.reads); none for a query the list refuses. */
function firstListReads(def: ResourceDefinition<any, any, any>, account: string, query: OperationInput['query']): Read[] {
  try {
    return [{ scope: { account, kind: def.kind }, page: firstListQuery(listPageRequest(def, query)) }];
  } catch {
    return [];
  }
}

/** One page of the records of `def` that reference the record `parentId` of `parent`, newest first. */
export async function listReferrers<R extends BaseRecord>(ctx: OperationContext, def: ResourceDefinition<R>, parent: ResourceDefinition<any, any, any>, parentId: string, segment: string, query: OperationInput['query']): Promise<Record<string, unknown>> {
  const page = parsePageRequest(query);
  const target = await getRecord(ctx, parent, parentId);
  const ids = await referrerPage(ctx, target.id, `${def.prefix}_`, { ...page, limit: page.limit + 1 });
  const items: R[] = [];
  for (const id of ids.slice(0, page.limit)) {
    const record = await ctx.tx.get(scopeOf(ctx, def.kind), id);
    if (record) items.push(record as unknown as R);
  }
  return listEnvelope(
    def.listKey,
    items.map((record) => respond(ctx, def, record)),
    absoluteUri(ctx.baseUrl, `${parent.path}/${target.id}/${segment}`),
    page,
    ids[Math.min(ids.length, page.limit) - 1],
    ids.length > page.limit,
  );
}

/** What every operation of a definition shares: id `<name>.<verb>`, tag, method, path and status. */
function operationOf(def: ResourceDefinition<any, any, any>, verb: string, method: Operation['method'], path: string, status: Operation['status'], rest: Pick<Operation, 'mutates' | 'summary' | 'run'> & Partial<Operation>): Operation {
  return { id: `${def.name}.${verb}`, tag: def.name, method, path, status, ...rest };
}

/** The operation builders of the five CRUD operations. */
const CRUD_BUILDERS: Record<CrudOperation, (def: ResourceDefinition<any, any, any>) => Operation> = {
  create: (def) =>
    operationOf(def, 'create', 'POST', def.path, 201, {
      mutates: true,
      body: def.createSchema,
      summary: `Create a ${def.label}`,
      parse: (input) => parseInput(def.createSchema, input.body ?? {}),
      ...(def.prepareCreate ? { prepare: (input: OperationInput, caller: Caller) => def.prepareCreate!(input.body, caller) } : {}),
      run: (ctx, input) => createRecord(ctx, def, input.body as Record<string, unknown>, input.prepared),
    }),
  get: (def) =>
    operationOf(def, 'get', 'GET', `${def.path}/:id`, 200, {
      mutates: false,
      summary: `Get a ${def.label}`,
      reads: (account, input) => [{ scope: { account, kind: def.kind }, id: input.params.id! }],
      run: async (ctx, input) => respond(ctx, def, await getRecord(ctx, def, input.params.id!)),
    }),
  list: (def) =>
    operationOf(def, 'list', 'GET', def.path, 200, {
      mutates: false,
      query: def.filterable ? ['before_id', 'limit', 'filter'] : ['before_id', 'limit'],
      summary: `List ${def.label}s`,
      reads: (account, input) => firstListReads(def, account, input.query),
      run: (ctx, input) => listRecords(ctx, def, input.query),
    }),
  update: (def) =>
    operationOf(def, 'update', 'PATCH', `${def.path}/:id`, 200, {
      mutates: true,
      body: def.updateSchema,
      summary: `Update a ${def.label}`,
      ...(def.prepareUpdate ? { prepare: (input: OperationInput, caller: Caller) => def.prepareUpdate!(parseInput(def.updateSchema, stripPathIds(input.body ?? {}, input.params)), caller) } : {}),
      run: (ctx, input) => updateRecord(ctx, def, input.params.id!, stripPathIds(input.body ?? {}, input.params), input.prepared),
    }),
  delete: (def) =>
    operationOf(def, 'delete', 'DELETE', `${def.path}/:id`, 204, {
      mutates: true,
      summary: `Delete a ${def.label}`,
      run: async (ctx, input) => void (await deleteRecord(ctx, def, input.params.id!)),
    }),
};

/** The command operations of a definition: `POST <path>/:id/<name>` with `{}` (or `DELETE` without a body), 204. */
export function commandOperations<R extends BaseRecord>(def: ResourceDefinition<R>): Operation[] {
  return Object.entries(def.commands ?? {}).map(([name, command]) => {
    const method = command.method ?? 'POST';
    return operationOf(def, command.verb ?? name, method, `${def.path}/:id/${name}`, 204, {
      mutates: true,
      ...(method === 'POST' ? { body: NO_FIELDS, parse: (input: OperationInput) => parseInput(NO_FIELDS, stripPathIds(input.body ?? {}, input.params)) } : {}),
      summary: command.summary,
      ...(command.relay
        ? {
            async prepare(input: OperationInput, caller: Caller) {
              const record = await caller.reader.get({ account: caller.principal.account, kind: def.kind }, input.params.id!);
              // An unknown id is answered by `run`, with the kind's 404.
              return record ? command.relay!(caller.services, record as unknown as R) : false;
            },
          }
        : {}),
      async run(ctx, input) {
        if (input.prepared !== true) await command.run(ctx, await getRecord(ctx, def, input.params.id!));
        return undefined;
      },
    });
  });
}

/** The list under a parent record of a definition that has one (`listedUnder`). */
export function listedUnderOperations<R extends BaseRecord>(def: ResourceDefinition<R>): Operation[] {
  const under = def.listedUnder;
  if (!under) return [];
  return [
    operationOf(under.parent, under.operation, 'GET', `${under.parent.path}/:id/${under.segment}`, 200, {
      mutates: false,
      query: ['before_id', 'limit'],
      summary: `List the ${def.label}s of a ${under.parent.label}`,
      run: (ctx, input) => listReferrers(ctx, def, under.parent, input.params.id!, under.segment, input.query),
    }),
  ];
}

/** Every operation of a definition: its CRUD operations, its commands, then its list under a parent. */
export function definitionOperations<R extends BaseRecord>(def: ResourceDefinition<R>): Operation[] {
  return [...crudOperations(def), ...commandOperations(def), ...listedUnderOperations(def)];
}

/** The create/get/list/update/delete operations of a definition (those it enables), in that order. */
export function crudOperations<R extends BaseRecord>(def: ResourceDefinition<R>): Operation[] {
  const enabled = new Set<CrudOperation>(def.operations ?? ['create', 'get', 'list', 'update', 'delete']);
  return (Object.keys(CRUD_BUILDERS) as CrudOperation[]).filter((name) => enabled.has(name)).map((name) => CRUD_BUILDERS[name](def));
}
