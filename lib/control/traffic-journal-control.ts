import type { ControlOperation } from '../engine/context.ts';
import { accountOf, single } from '../journal/request-journal.ts';
import { parseTrafficQuery } from '../journal/traffic-journal.ts';

/** The traffic journal (lib/journal/traffic-journal.ts) on the control plane: list and clear. */

export const TRAFFIC_JOURNAL_CONTROL_OPERATIONS: readonly ControlOperation[] = [
  {
    id: 'control.traffic.list',
    method: 'GET',
    path: '/traffic',
    status: 200,
    summary:
      'The traffic journal (what the ingress carried, with the rules its policy evaluated), newest first: filter by account_id (none: traffic no endpoint took), status (404, 4xx, failed), endpoint_id, errors=true (a rule failed); limit ≤ 1000',
    run: async (instance, input) => ({ traffic: instance.traffic.list(parseTrafficQuery(input.query)), size: instance.traffic.size }),
  },
  {
    id: 'control.traffic.clear',
    method: 'DELETE',
    path: '/traffic',
    status: 200,
    summary: 'Empty the traffic journal of one account (account_id; none: traffic no endpoint took) or of all',
    async run(instance, input) {
      const q = single(input.query, ['account_id']);
      return { removed: instance.traffic.clear(accountOf(q.account_id)) };
    },
  },
];
