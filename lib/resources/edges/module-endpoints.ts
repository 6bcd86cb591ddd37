import type { Operation, OperationContext } from '../../context.ts';
import { notFound } from '../../conventions/errors.ts';
import { parseInput } from '../../conventions/fields.ts';
import { getRecord } from '../../resource.ts';
import { httpsEdges, ROUTE_LABEL, ROUTE_MODULES } from './https.ts';
import type { ModuleSpec, StoredModule } from './modules.ts';
import { loadRoute, saveRoute } from './routes.ts';
import { saveEdge, stripEdgeIds, type EdgeDefinition, type EdgeRecord } from './shared.ts';
import { tcpEdges } from './tcp.ts';
import { tlsEdges } from './tls.ts';

/**
 * The module endpoints: PUT (replace, 200 with the module), GET (200) and DELETE (204) on
 * `<edge or route>/<module>`, generated for every (holder, module) pair from one table: the three
 * edge kinds and HTTPS edge routes, each with the module specs it holds.
 *
 * PUT takes the bare module, or the `{ id, module }` wrapper (`{ edge_id, id, module }` for routes)
 * that the official TS client sends; ids in the wrapper must match the path. A PUT is checked like
 * the same module in a PATCH of its holder (references, TLS termination rules). GET of a module
 * that is not set is a 404; DELETE of one is a no-op (204), so deletes can be repeated.
 */

/** What the endpoints of one holder need: where it lives and how to read and write its modules. */
interface ModuleHolder {
  /** Operation-id prefix: `tcp_edge` gives `tcp_edge_backend_module.replace`. */
  readonly id: string;
  /** Path of the holder with its parameters. */
  readonly path: string;
  readonly label: string;
  readonly modules: readonly ModuleSpec[];
  load(ctx: OperationContext, params: Readonly<Record<string, string>>): Promise<LoadedHolder>;
}

interface LoadedHolder {
  readonly id: string;
  readonly record: Readonly<Record<string, unknown>>;
  /** Stores the module (`null`: removes it) with the holder's rules and the reference index. */
  set(name: string, stored: StoredModule | null): Promise<void>;
}

function edgeHolder<R extends EdgeRecord>(id: string, def: EdgeDefinition<R>): ModuleHolder {
  return {
    id,
    path: `${def.path}/:id`,
    label: def.label,
    modules: def.modules,
    async load(ctx, params) {
      const record = await getRecord(ctx, def, params.id!);
      return {
        id: record.id,
        record,
        async set(name, stored) {
          const next = { ...record, [name]: stored } as R;
          def.checkModules?.(next, [name]);
          await saveEdge(ctx, def, record, next);
        },
      };
    },
  };
}

const routeHolder: ModuleHolder = {
  id: 'edge_route',
  path: `${httpsEdges.path}/:edge_id/routes/:id`,
  label: ROUTE_LABEL,
  modules: ROUTE_MODULES,
  async load(ctx, params) {
    const { edge, route } = await loadRoute(ctx, params);
    return { id: route.id, record: route, set: (name, stored) => saveRoute(ctx, edge, route, { ...route, [name]: stored }) };
  },
};

const HOLDERS: readonly ModuleHolder[] = [edgeHolder('tcp_edge', tcpEdges), edgeHolder('tls_edge', tlsEdges), edgeHolder('https_edge', httpsEdges), routeHolder];

/** The module object of a PUT body: the bare module, or the `module` of the client's wrapper. */
function moduleBody(body: unknown, params: Readonly<Record<string, string>>): unknown {
  const stripped = stripEdgeIds(body, params);
  const keys = stripped && typeof stripped === 'object' && !Array.isArray(stripped) ? Object.keys(stripped) : [];
  return keys.length === 1 && keys[0] === 'module' ? (stripped as { module: unknown }).module : stripped;
}

function moduleOperations(holder: ModuleHolder, spec: ModuleSpec): Operation[] {
  const common = { tag: 'edge_modules', path: `${holder.path}/${spec.name}` } as const;
  const id = `${holder.id}_${spec.name}_module`;
  return [
    {
      ...common,
      id: `${id}.replace`,
      method: 'PUT',
      status: 200,
      mutates: true,
      body: spec.schema,
      summary: `Replace the ${spec.label} module of a ${holder.label}`,
      async run(ctx, input) {
        const parsed = parseInput(spec.schema, moduleBody(input.body, input.params));
        const loaded = await holder.load(ctx, input.params);
        const stored = await spec.store(ctx, parsed, '');
        await loaded.set(spec.name, stored);
        return spec.respond(ctx, stored, loaded.id);
      },
    },
    {
      ...common,
      id: `${id}.get`,
      method: 'GET',
      status: 200,
      mutates: false,
      summary: `Get the ${spec.label} module of a ${holder.label}`,
      async run(ctx, input) {
        const loaded = await holder.load(ctx, input.params);
        const stored = loaded.record[spec.name] as StoredModule | null | undefined;
        if (!stored) notFound(`${spec.label} module of ${holder.label}`, loaded.id);
        return spec.respond(ctx, stored, loaded.id);
      },
    },
    {
      ...common,
      id: `${id}.delete`,
      method: 'DELETE',
      status: 204,
      mutates: true,
      summary: `Remove the ${spec.label} module of a ${holder.label}`,
      async run(ctx, input) {
        const loaded = await holder.load(ctx, input.params);
        if (loaded.record[spec.name]) await loaded.set(spec.name, null);
        return undefined;
      },
    },
  ];
}

/** PUT/GET/DELETE for every module of every edge kind and of HTTPS edge routes. */
export const EDGE_MODULE_OPERATIONS: readonly Operation[] = HOLDERS.flatMap((holder) => holder.modules.flatMap((spec) => moduleOperations(holder, spec)));
