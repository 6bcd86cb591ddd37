/**
 * The ingress: where clients' traffic enters Burrow and goes down a live agent's tunnel, through
 * the endpoint's traffic policy (docs/ingress.md).
 */
export { createIngress, type Ingress, type IngressOptions } from './http-ingress.ts';
export { errorPage, INGRESS_CODES, type ErrorPage } from './error-page.ts';
export { hostnameOf, routeHttp, routeInternal, type IngressRoute, type LiveSessions } from './routes.ts';
