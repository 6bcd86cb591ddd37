import { childOperations, type ChildDefinition } from './children.ts';
import { controlOperation, type ControlOperation, type ControlOperationSpec, type KindIndex, type Operation, type Reaction, type RequestGuard } from './context.ts';
import { ERRORS, type ErrorSpec } from '../conventions/errors.ts';
import type { AnyDefinition, Example, Family, WriteHook } from './family.ts';
import { definitionOperations } from './resource.ts';

/**
 * The registry: everything the instance serves, derived from one list of families. Every other list
 * (kinds, operations in routing order, control operations, guards, reactions, error codes) is
 * computed here once, and a kind is found from its name, its store kind or an id's prefix, so no
 * code re-parses ids or keeps a table of its own.
 */
export class Registry implements KindIndex {
  readonly families: readonly Family[];
  /** Every flat resource kind, in family order. */
  readonly kinds: readonly AnyDefinition[];
  readonly children: readonly ChildDefinition<any, any, any, any>[];
  /** Every API operation, in routing order: kinds' operations, then children's, then the families' own. */
  readonly operations: readonly Operation[];
  readonly controlOperations: readonly ControlOperation[];
  readonly guards: readonly RequestGuard[];
  readonly writeHooks: readonly WriteHook[];
  readonly #byName: ReadonlyMap<string, AnyDefinition>;
  readonly #byStoreKind: ReadonlyMap<string, AnyDefinition>;
  readonly #byPrefix: ReadonlyMap<string, AnyDefinition>;
  readonly #reactions: ReadonlyMap<string, readonly Reaction[]>;

  /** `coreControl` are the control operations of the core (health, accounts, reset, snapshots…). */
  constructor(families: readonly Family[], coreControl: readonly ControlOperationSpec[] = []) {
    this.families = families;
    this.kinds = families.flatMap((family) => Object.values(family.kinds));
    this.children = families.flatMap((family) => family.children ?? []);
    this.operations = [
      ...this.kinds.flatMap((def) => definitionOperations(def)),
      ...this.children.flatMap((def) => childOperations(def)),
      ...families.flatMap((family) => family.operations ?? []),
    ];
    this.controlOperations = [...coreControl, ...families.flatMap((family) => family.controlOperations ?? [])].map(controlOperation);
    this.guards = families.flatMap((family) => family.guards ?? []);
    this.writeHooks = families.flatMap((family) => (family.writeHook ? [family.writeHook] : []));
    this.errors(); // refuses a family whose error table clashes, at start-up
    this.#byName = uniqueMap(this.kinds, (def) => def.name, 'name');
    const owningRecords = this.kinds.filter((def) => def.sameRecordsAs === undefined);
    this.#byStoreKind = uniqueMap(owningRecords, (def) => def.kind, 'store kind');
    this.#byPrefix = uniqueMap(owningRecords, (def) => def.prefix, 'id prefix');
    const reactions = new Map<string, Reaction[]>();
    for (const reaction of families.flatMap((family) => family.reactions ?? [])) reactions.set(reaction.kind, [...(reactions.get(reaction.kind) ?? []), reaction]);
    this.#reactions = reactions;
  }

  /** The kind named `name` (`api_keys`), or undefined. */
  kind(name: string): AnyDefinition | undefined {
    return this.#byName.get(name);
  }

  /** The kind whose records are stored under `storeKind` (`api_key`), or undefined. */
  kindStoredAs(storeKind: string): AnyDefinition | undefined {
    return this.#byStoreKind.get(storeKind);
  }

  /** The kind an id belongs to, by its prefix (`ak_…` → API keys), or undefined. */
  kindOfId(id: string): AnyDefinition | undefined {
    const underscore = id.lastIndexOf('_');
    return underscore > 0 ? this.#byPrefix.get(id.slice(0, underscore)) : undefined;
  }

  /** The reactions families registered for writes of records of store kind `storeKind`. */
  reactionsTo(storeKind: string): readonly Reaction[] {
    return this.#reactions.get(storeKind) ?? NONE;
  }

  /**
   * Every error condition by name: the core's table and each family's own. A name defined twice is a
   * programming error, and so is a number of Burrow's own range (9000–9099) given to two conditions.
   */
  errors(): Readonly<Record<string, ErrorSpec>> {
    const out: Record<string, ErrorSpec> = { ...ERRORS };
    const owners = new Map<number, string>();
    for (const [name, spec] of Object.entries(ERRORS)) owners.set(spec.code, name);
    for (const family of this.families) {
      for (const [name, spec] of Object.entries(family.errors ?? {})) {
        if (name in out) throw new Error(`burrow: error ${name} of family ${family.name} is defined twice`);
        const owner = owners.get(spec.code);
        if (owner && spec.code >= 9000 && spec.code < 9100) throw new Error(`burrow: error ${name} of family ${family.name} reuses ${owner}'s number ${spec.code}`);
        owners.set(spec.code, name);
        out[name] = spec;
      }
    }
    return out;
  }

  /** The sweeps' example of the kind named `name`, or undefined. */
  example(name: string): Example | undefined {
    for (const family of this.families) {
      const example = family.examples?.[name];
      if (example) return example;
    }
    return undefined;
  }
}

const NONE: readonly Reaction[] = [];

function uniqueMap<T>(items: readonly T[], key: (item: T) => string, what: string): ReadonlyMap<string, T> {
  const map = new Map<string, T>();
  for (const item of items) {
    const k = key(item);
    if (map.has(k)) throw new Error(`burrow: two resource kinds share the ${what} '${k}'`);
    map.set(k, item);
  }
  return map;
}
