import { operatorIn, type ControlOperationSpec, type Instance } from '../../engine/context.ts';
import { fail } from '../../conventions/errors.ts';
import { eventDestinations } from './destinations.ts';
import { clearOutbox, readOutbox } from './outbox.ts';
import { eventsOf } from './settings.ts';

/** Control-plane access to the event catalogue and to destinations' outboxes. */

const outboxPath = '/accounts/:account_id/event_destinations/:destination_id/outbox';

/** The account and event destination named by the path, or the 404. */
async function requireDestination(instance: Instance, params: Readonly<Record<string, string>>): Promise<[account: string, destination: string]> {
  const [account, id] = [params.account_id!, params.destination_id!];
  if (!(await instance.reader.get({ account, kind: eventDestinations.kind }, id))) {
    fail('NOT_FOUND', `event destination '${id}' was not found in account '${account}'`, { id });
  }
  return [account, id];
}

export const EVENT_CONTROL_OPERATIONS: readonly ControlOperationSpec[] = [
  {
    id: 'control.event_types',
    route: 'GET /event_types',
    open: true,
    summary: 'The event catalogue: every type a subscription source may name',
    run: async (instance) => ({ event_types: [...eventsOf(instance.services).eventTypes].sort() }),
  },
  {
    id: 'control.outbox.get',
    route: `GET ${outboxPath}`,
    summary: "The events delivered to an event destination (oldest first) and how many were dropped",
    async run(instance, input) {
      const [account, destination] = await requireDestination(instance, input.params);
      return readOutbox(instance.reader, account, destination, eventsOf(instance.services).outboxLimit);
    },
  },
  {
    id: 'control.outbox.clear',
    route: `DELETE ${outboxPath}`,
    summary: "Empty an event destination's outbox",
    async run(instance, input) {
      const [account, destination] = await requireDestination(instance, input.params);
      return { removed: await instance.perform(operatorIn(account), (ctx) => clearOutbox(ctx.tx, account, destination)) };
    },
  },
];
