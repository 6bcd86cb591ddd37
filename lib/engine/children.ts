import type { Operation, OperationContext, OperationInput } from './context.ts';
import { notFound } from '../conventions/errors.ts';
import { parseInput, type Schema } from '../conventions/fields.ts';
import { getRecord, stripPathIds, type BaseRecord, type Parsed, type ResourceDefinition } from './resource.ts';

/**
 * Child collections: resources that live under one record of a parent kind and are addressed as
 * `<parent path>/:<parent param>/<segment>/:<child param>` (HTTPS edge routes, event subscription
 * sources). The engine parses the body, then reads the parent in the caller's account once (its
 * 404 covers a parent of another account), then hands both to the definition's hooks; children are
 * stored by the definition (`save`), usually inside the parent record.
 *
 * Singleton sub-resources: one optional object per holder record at `<holder path>/<name>`, with
 * PUT (replace, 200), GET (200; 404 when not set) and DELETE (204; a no-op when not set, so it can be
 * repeated): the edge modules.
 */

type ChildOperation = 'create' | 'list' | 'get' | 'update' | 'delete';

/** A child kind `C` under parent records `P`. */
export interface ChildDefinition<P extends BaseRecord, C, Create extends Schema = Schema, Update extends Schema = Schema> {
  /** Operation-id prefix and OpenAPI tag, e.g. `https_edge_routes`. */
  readonly name: string;
  readonly parent: ResourceDefinition<P, any, any>;
  /** The parent's path parameter, e.g. `edge_id`. */
  readonly parentParam: string;
  /** The collection's path segment below the parent, e.g. `routes`. */
  readonly segment: string;
  /** The child's path parameter, e.g. `id`. */
  readonly childParam: string;
  /** Which operations exist, and their OpenAPI summaries. */
  readonly summaries: Partial<Record<ChildOperation, string>>;
  readonly createSchema: Create;
  readonly updateSchema: Update;
  /** Removes path ids the client repeats in a body (default: `stripPathIds`). */
  stripIds?(body: unknown, params: Readonly<Record<string, string>>): unknown;
  /** The child named `id`, or throws the child's 404. */
  find(ctx: OperationContext, parent: P, id: string): C;
  /** Builds a new child from the validated body (checks, ids, defaults); the engine saves it. */
  create(ctx: OperationContext, parent: P, input: Parsed<Create>): Promise<C>;
  /** Applies a validated patch; without it, PATCH validates `{}` and answers the child unchanged. */
  update?(ctx: OperationContext, parent: P, child: C, patch: Parsed<Update>): Promise<C>;
  /** Stores a change: `previous` absent on create, `next` absent on delete. Answers the parent as saved. */
  save(ctx: OperationContext, parent: P, previous: C | undefined, next: C | undefined): Promise<P>;
  respond(ctx: OperationContext, parent: P, child: C): unknown;
  /** The list response of all children of a parent. */
  list?(ctx: OperationContext, parent: P): unknown;
}

/** The operations of a child kind (those it gives summaries for), in CRUD order. */
export function childOperations<P extends BaseRecord, C>(def: ChildDefinition<P, C, any, any>): Operation[] {
  const collection = `${def.parent.path}/:${def.parentParam}/${def.segment}`;
  const item = `${collection}/:${def.childParam}`;
  const parser = (schema: Schema) => (input: OperationInput) => parseInput(schema, (def.stripIds ?? stripPathIds)(input.body ?? {}, input.params));
  const parentOf = (ctx: OperationContext, input: OperationInput) => getRecord(ctx, def.parent, input.params[def.parentParam]!);
  const childOf = async (ctx: OperationContext, input: OperationInput) => {
    const parent = await parentOf(ctx, input);
    return { parent, child: def.find(ctx, parent, input.params[def.childParam]!) };
  };
  const builders: Record<ChildOperation, (summary: string) => Operation> = {
    create: (summary) => ({
      id: `${def.name}.create`, tag: def.name, method: 'POST', path: collection, status: 201, mutates: true, body: def.createSchema, parse: parser(def.createSchema), summary,
      async run(ctx, input) {
        const parent = await parentOf(ctx, input);
        const child = await def.create(ctx, parent, input.body);
        return def.respond(ctx, await def.save(ctx, parent, undefined, child), child);
      },
    }),
    list: (summary) => ({
      id: `${def.name}.list`, tag: def.name, method: 'GET', path: collection, status: 200, mutates: false, summary,
      run: async (ctx, input) => def.list!(ctx, await parentOf(ctx, input)),
    }),
    get: (summary) => ({
      id: `${def.name}.get`, tag: def.name, method: 'GET', path: item, status: 200, mutates: false, summary,
      async run(ctx, input) {
        const { parent, child } = await childOf(ctx, input);
        return def.respond(ctx, parent, child);
      },
    }),
    update: (summary) => ({
      id: `${def.name}.update`, tag: def.name, method: 'PATCH', path: item, status: 200, mutates: def.update !== undefined, body: def.updateSchema, parse: parser(def.updateSchema), summary,
      async run(ctx, input) {
        const { parent, child } = await childOf(ctx, input);
        if (!def.update) return def.respond(ctx, parent, child);
        const next = await def.update(ctx, parent, child, input.body);
        return def.respond(ctx, await def.save(ctx, parent, child, next), next);
      },
    }),
    delete: (summary) => ({
      id: `${def.name}.delete`, tag: def.name, method: 'DELETE', path: item, status: 204, mutates: true, summary,
      async run(ctx, input) {
        const { parent, child } = await childOf(ctx, input);
        await def.save(ctx, parent, child, undefined);
        return undefined;
      },
    }),
  };
  return (Object.keys(builders) as ChildOperation[]).filter((name) => def.summaries[name] !== undefined).map((name) => builders[name](def.summaries[name]!));
}

/** A record that holds singletons: where it lives and how to read and write them. */
export interface SingletonHolder {
  /** Operation-id prefix: `tcp_edge` gives `tcp_edge_backend_module.replace`. */
  readonly id: string;
  /** Path of the holder with its parameters. */
  readonly path: string;
  readonly label: string;
  load(ctx: OperationContext, params: Readonly<Record<string, string>>): Promise<LoadedHolder>;
}

/** One holder as read for a request. */
export interface LoadedHolder {
  readonly id: string;
  readonly record: Readonly<Record<string, unknown>>;
  /** Stores the singleton (`null`: removes it) with the holder's rules and indexes. */
  set(name: string, stored: unknown): Promise<void>;
}

/** One kind of singleton: its field on the holder, its body schema, how it is stored and answered. */
export interface SingletonSpec<Stored> {
  readonly name: string;
  readonly label: string;
  readonly schema: Schema;
  store(ctx: OperationContext, input: any, field: string): Stored | Promise<Stored>;
  respond(ctx: OperationContext, stored: Stored, holderId: string): unknown;
}

/**
 * PUT/GET/DELETE of one singleton of one holder. `kind` names the family in operation ids and tags
 * (`module` gives `…_backend_module.replace`, tag `edge_modules`); `unwrap` takes the singleton out
 * of a PUT body that clients wrap.
 */
export function singletonOperations<Stored>(holder: SingletonHolder, spec: SingletonSpec<Stored>, kind: { suffix: string; tag: string }, unwrap: (body: unknown, params: Readonly<Record<string, string>>) => unknown): Operation[] {
  const common = { tag: kind.tag, path: `${holder.path}/${spec.name}` } as const;
  const id = `${holder.id}_${spec.name}_${kind.suffix}`;
  return [
    {
      ...common, id: `${id}.replace`, method: 'PUT', status: 200, mutates: true, body: spec.schema, summary: `Replace the ${spec.label} ${kind.suffix} of a ${holder.label}`,
      parse: (input) => parseInput(spec.schema, unwrap(input.body, input.params)),
      async run(ctx, input) {
        const loaded = await holder.load(ctx, input.params);
        const stored = await spec.store(ctx, input.body, '');
        await loaded.set(spec.name, stored);
        return spec.respond(ctx, stored, loaded.id);
      },
    },
    {
      ...common, id: `${id}.get`, method: 'GET', status: 200, mutates: false, summary: `Get the ${spec.label} ${kind.suffix} of a ${holder.label}`,
      async run(ctx, input) {
        const loaded = await holder.load(ctx, input.params);
        const stored = loaded.record[spec.name] as Stored | null | undefined;
        if (!stored) notFound(`${spec.label} ${kind.suffix} of ${holder.label}`, loaded.id);
        return spec.respond(ctx, stored, loaded.id);
      },
    },
    {
      ...common, id: `${id}.delete`, method: 'DELETE', status: 204, mutates: true, summary: `Remove the ${spec.label} ${kind.suffix} of a ${holder.label}`,
      async run(ctx, input) {
        const loaded = await holder.load(ctx, input.params);
        if (loaded.record[spec.name]) await loaded.set(spec.name, null);
        return undefined;
      },
    },
  ];
}
