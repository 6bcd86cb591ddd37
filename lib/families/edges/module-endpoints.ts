import { singletonOperations, type SingletonHolder } from '../../engine/children.ts';
import type { Operation } from '../../engine/context.ts';
import { getRecord } from '../../engine/resource.ts';
import { httpsEdges, ROUTE_LABEL, ROUTE_MODULES } from './https.ts';
import { displacedModules, type ModuleSpec, type StoredModule } from './modules.ts';
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
 * the same module in a PATCH of its holder (references, TLS termination rules); a PUT of `policy`
 * unsets `traffic_policy` and the other way round (modules.ts). GET of a module
 * that is not set is a 404; DELETE of one is a no-op (204), so deletes can be repeated.
 */

/** A holder of modules: an edge kind or HTTPS edge routes, with the module specs it holds. */
interface ModuleHolder extends SingletonHolder {
  readonly modules: readonly ModuleSpec[];
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
          const next = { ...record, ...displacedModules(def.modules, name, stored as StoredModule | null), [name]: stored } as unknown as R;
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
    return {
      id: route.id,
      record: route,
      set: async (name, stored) => void (await saveRoute(ctx, edge, route, { ...route, ...displacedModules(ROUTE_MODULES, name, stored as StoredModule | null), [name]: stored })),
    };
  },
};

const HOLDERS: readonly ModuleHolder[] = [edgeHolder('tcp_edge', tcpEdges), edgeHolder('tls_edge', tlsEdges), edgeHolder('https_edge', httpsEdges), routeHolder];

/** The module object of a PUT body: the bare module, or the `module` of the client's wrapper. */
function moduleBody(body: unknown, params: Readonly<Record<string, string>>): unknown {
  const stripped = stripEdgeIds(body, params);
  const keys = stripped && typeof stripped === 'object' && !Array.isArray(stripped) ? Object.keys(stripped) : [];
  return keys.length === 1 && keys[0] === 'module' ? (stripped as { module: unknown }).module : stripped;
}

/** PUT/GET/DELETE for every module of every edge kind and of HTTPS edge routes. */
export const EDGE_MODULE_OPERATIONS: readonly Operation[] = HOLDERS.flatMap((holder) =>
  holder.modules.flatMap((spec) => singletonOperations<StoredModule>(holder, spec, { suffix: 'module', tag: 'edge_modules' }, moduleBody)),
);
