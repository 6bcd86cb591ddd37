export { createFetchHandler, type FetchHandlerOptions } from './fetch-handler.ts';
export { answerUnparsedRequests, createNodeListener, type NodeListenerOptions } from './node.ts';
export type { TrustProxySetting } from './trust-proxy.ts';
export { MAX_BODY_BYTES, type HttpRequest, type HttpResponse } from './body.ts';
export { createHttpHandler, type HttpHandlerOptions, type RequestLog } from './handler.ts';
