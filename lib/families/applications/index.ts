import { defineFamily } from '../../engine/family.ts';
import { APPLICATION_CONTROL_OPERATIONS, applicationSessions, applicationUsers } from './applications.ts';

/** Application users and sessions (people who signed in through an edge's OAuth/OIDC/SAML module). */
export const applicationsFamily = defineFamily({
  name: 'applications',
  kinds: { application_users: applicationUsers, application_sessions: applicationSessions },
  controlOperations: APPLICATION_CONTROL_OPERATIONS,
  examples: {
    application_users: { control: 'control.application_users.create', body: () => ({}) },
    application_sessions: { control: 'control.application_sessions.create', body: async (seed) => ({ application_user_id: await seed.id('application_users'), public_url: 'https://app.example.com' }) },
  },
});
