import type { ChildDefinition } from './children.ts';
import type { ControlOperationSpec, EmittedEvent, KindIndex, Operation, OperationContext, Reaction, RequestGuard, Services } from './context.ts';
import type { ErrorSpec } from '../conventions/errors.ts';
import type { ResourceDefinition } from './resource.ts';
import type { StoreReader } from '../store.ts';

/**
 * A family: the unit Burrow grows by. One folder under lib/families/ exports one `Family` from its
 * index.ts: the resource kinds it serves, its child collections and extra operations, its
 * control-plane operations, guards, error codes, the example bodies the sweeps create its records
 * with, and how it takes part in other families' writes (reactions) and in every write (the events
 * family's write hook). The registry (lib/engine/registry.ts) is built from a list of families; the core
 * imports none of them.
 */

export type { Reaction };

/** Any resource definition, whatever its record and body types. */
export type AnyDefinition = ResourceDefinition<any, any, any>;

/** The resource kinds of a family, keyed by their name (the operation-id prefix). */
export type FamilyKinds = Readonly<Record<string, AnyDefinition>>;

export interface Family<Kinds extends FamilyKinds = FamilyKinds> {
  /** The folder name: `vaults`, `ip-policies`. */
  readonly name: string;
  /** Flat collections, by name; each key is its definition's `name` (the architecture test checks). */
  readonly kinds: Kinds;
  /** Collections under one record of a parent kind (HTTPS edge routes, event sources). */
  readonly children?: readonly ChildDefinition<any, any, any, any>[];
  /** Operations no definition describes: singleton sub-resources (edge modules), hand-written ones. */
  readonly operations?: readonly Operation[];
  /** Control-plane operations under `/_burrow` (the simulator, outboxes, test seeding). */
  readonly controlOperations?: readonly ControlOperationSpec[];
  /** Checks run before every authenticated API operation (IP restrictions of type `api`). */
  readonly guards?: readonly RequestGuard[];
  /** The family's own error conditions (the catalogue numbers it answers with). */
  readonly errors?: Readonly<Record<string, ErrorSpec>>;
  /** What the family does, in the same transaction, when a record of another family's kind changes. */
  readonly reactions?: readonly Reaction[];
  /** Work added to every write transaction (only the events family has one). */
  readonly writeHook?: WriteHook;
  /**
   * Validates the family's settings among `createBurrow`'s options and answers its state for the
   * instance (reachable as `ctx.services.state(name)`); throws a plain Error for a bad option.
   */
  setup?(options: Readonly<Record<string, unknown>>, kinds: KindIndex): unknown;
  /** How the sweeps (isolation, fuzz, schemas, OpenAPI) create a representative record of each kind. */
  readonly examples?: Readonly<Record<string, Example>>;
}

/** Identity helper that keeps the family's kinds typed (the in-process client is typed from them). */
export function defineFamily<const Kinds extends FamilyKinds>(family: Family<Kinds>): Family<Kinds> {
  return family;
}

/** Work a family adds to every write transaction; the events family records what operations emitted. */
export interface WriteHook {
  /** Inside the transaction, after the operation's work, with the events it emitted (may be none). */
  inside(ctx: OperationContext, emitted: readonly EmittedEvent[]): Promise<unknown>;
  /** After the transaction committed, with what `inside` answered in the run that committed. */
  committed?(result: unknown, services: Services): Promise<void> | undefined;
  /**
   * Whether an event of `type` emitted in `account` would be kept (absent: it may be), so a
   * producer of frequent events (the ingress's traffic events) skips the write when nobody asks.
   */
  listens?(reader: StoreReader, account: string, type: string): Promise<boolean>;
}

/**
 * A representative create body of one kind, for the sweeps. `seed` creates what the body refers to
 * (a record of another kind, key material made by the test), so an example states only what its
 * own kind needs. Kinds that no API call creates (agent sessions, application users) say which
 * control operation makes one.
 */
export type Example =
  | { readonly body: (seed: ExampleSeed) => Promise<Record<string, unknown>> | Record<string, unknown> }
  | { readonly control: string; readonly body: (seed: ExampleSeed) => Promise<Record<string, unknown>> | Record<string, unknown>; readonly pick?: (answer: any, seed: ExampleSeed) => Promise<string> | string };

/** What an example may ask the sweep for. */
export interface ExampleSeed {
  /** The id of a record of kind `name` (created once per sweep from that kind's own example). */
  id(name: string): Promise<string>;
  /** A whole created record of kind `name` as the API answered it (tokens included). */
  record(name: string): Promise<Record<string, any>>;
  /** The records of kind `name` in the sweep's account, as the API lists them. */
  list(name: string): Promise<Record<string, any>[]>;
  /** The account the sweep works in. */
  readonly accountId: string;
  /** An OpenSSH public key line (`ssh-ed25519 …`), made by the test. */
  sshPublicKey(): string;
  /** A CA certificate and a leaf certificate with its key, PEM, made by the test. */
  certificates(): { ca: string; cert: string; key: string };
  /** A name unique within the sweep, for fields that must be unique (domains, names). */
  unique(prefix: string): string;
}
