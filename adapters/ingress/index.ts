/**
 * The ingress: where clients' traffic enters Burrow and goes down a live agent's tunnel, through
 * the endpoint's traffic policy (docs/ingress.md).
 */
export { createIngress, type Ingress, type IngressOptions, type ListenAddress } from './ingress.ts';
export { errorPage, INGRESS_CODES, type ErrorPage } from './error-page.ts';
export { hostnameOf, IngressRoutes, type AgentTarget, type CloudTarget, type IngressTarget, type LiveSessions } from './routes.ts';
export type { EdgeTarget } from './edge-routes.ts';
