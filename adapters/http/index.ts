export { createFetchHandler, type FetchHandlerOptions } from './fetch-handler.ts';
export { createNodeListener, type NodeListenerOptions } from './node.ts';
export { createHttpHandler, MAX_BODY_BYTES, type HttpHandlerOptions, type HttpRequest, type HttpResponse, type RequestLog } from './handler.ts';
