import { defineFamily } from '../../engine/family.ts';
import { botUsers } from './bot-users.ts';
import { BOT_USERS_ERRORS } from './errors.ts';
import { GET_USER } from './users.ts';

export { botKind, botUsers } from './bot-users.ts';

/** Bot users: owners of keys and credentials that are no person; and reading the users references name. */
export const botUsersFamily = defineFamily({
  name: 'bot-users',
  kinds: { bot_users: botUsers },
  operations: [GET_USER],
  errors: BOT_USERS_ERRORS,
  examples: { bot_users: { body: (seed) => ({ name: seed.unique('bot') }) } },
});
