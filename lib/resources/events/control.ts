import type { ControlOperation } from '../../control.ts';
import { fail } from '../../conventions/errors.ts';
import { EVENT_DESTINATION_KIND } from './kinds.ts';

/** Control-plane access to the event catalogue and to destinations' outboxes. */

const outboxPath = '/accounts/:account_id/event_destinations/:destination_id/outbox';

async function requireDestination(burrow: Parameters<ControlOperation['run']>[0], account: string, id: string): Promise<void> {
  if (!(await burrow.store.get({ account, kind: EVENT_DESTINATION_KIND }, id))) {
    fail('NOT_FOUND', `event destination '${id}' was not found in account '${account}'`, { id });
  }
}

export const EVENT_CONTROL_OPERATIONS: readonly ControlOperation[] = [
  {
    id: 'control.event_types',
    method: 'GET',
    path: '/event_types',
    status: 200,
    open: true,
    summary: 'The event catalogue: every type a subscription source may name',
    run: async (burrow) => ({ event_types: [...burrow.services.eventTypes].sort() }),
  },
  {
    id: 'control.outbox.get',
    method: 'GET',
    path: outboxPath,
    status: 200,
    summary: "The events delivered to an event destination (oldest first) and how many were dropped",
    async run(burrow, input) {
      await requireDestination(burrow, input.params.account_id!, input.params.destination_id!);
      return burrow.outbox(input.params.account_id!, input.params.destination_id!);
    },
  },
  {
    id: 'control.outbox.clear',
    method: 'DELETE',
    path: outboxPath,
    status: 200,
    summary: "Empty an event destination's outbox",
    async run(burrow, input) {
      await requireDestination(burrow, input.params.account_id!, input.params.destination_id!);
      return { removed: await burrow.clearOutbox(input.params.account_id!, input.params.destination_id!) };
    },
  },
];
