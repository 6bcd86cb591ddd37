import { defineFamily } from '../../engine/family.ts';
import { botKind, botUsers } from '../bot-users/index.ts';

/**
 * Service users (/service_users, the vendor's Go client v7.7+): the vendor's new name for bot
 * users. The same records under a second path: a service user is a bot (`bot_…`), listed, read,
 * changed and deleted through either path, owning keys and credentials as bots do, under the same
 * rules (lib/families/bot-users/bot-users.ts); only the list takes the CEL `filter` here, as the Go
 * client v8 sends it.
 */
export const serviceUsers = botKind({ name: 'service_users', label: 'service user', filterable: true, sameRecordsAs: botUsers });

export const serviceUsersFamily = defineFamily({
  name: 'service-users',
  kinds: { service_users: serviceUsers },
  examples: { service_users: { body: (seed) => ({ name: seed.unique('service') }) } },
});
