import { defineFamily } from '../../engine/family.ts';
import { ENDPOINTS_ERRORS } from './errors.ts';
import { endpoints } from './endpoints.ts';
import { ENDPOINT_OPERATIONS } from './list.ts';

/**
 * Endpoints: cloud endpoints (CRUD), agent endpoints and edge endpoints (read-only projections).
 */
export const endpointsFamily = defineFamily({
  name: 'endpoints',
  errors: ENDPOINTS_ERRORS,
  kinds: { endpoints },
  operations: ENDPOINT_OPERATIONS,
  examples: { endpoints: { body: (seed) => ({ url: `https://${seed.unique('endpoint')}.internal`, type: 'cloud', traffic_policy: '{"on_http_request":[{"actions":[{"type":"custom-response","config":{"status_code":200}}]}]}' }) } },
});

export { addAgentEndpoint, removeAgentEndpoint } from './agent-endpoints.ts';
export { syncEdgeEndpoints } from './edge-endpoints.ts';
export { findCloudEndpoint, type CloudEndpointAddress } from './endpoints.ts';
export { isInternalHost, UPSTREAM_PROTOCOLS, type EndpointRecord } from './records.ts';

export { ENDPOINTS_ERRORS } from './errors.ts';
