import { defineFamily } from '../../family.ts';
import { botUsers } from './bot-users.ts';

/** Bot users: owners of keys and credentials that are no person. */
export const botUsersFamily = defineFamily({
  name: 'bot-users',
  kinds: { bot_users: botUsers },
  examples: { bot_users: { body: (seed) => ({ name: seed.unique('bot') }) } },
});
