import { failoverBackends } from './failover.ts';
import { httpResponseBackends } from './http-response.ts';
import { staticBackends } from './static.ts';
import { tunnelGroupBackends } from './tunnel-group.ts';
import { weightedBackends } from './weighted.ts';

/** The five backend kinds, in the order the registry serves them. */
export const BACKENDS = [weightedBackends, failoverBackends, httpResponseBackends, tunnelGroupBackends, staticBackends] as const;
