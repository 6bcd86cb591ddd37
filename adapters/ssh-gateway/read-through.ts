import type { Duplex } from 'node:stream';

/**
 * Makes `outer` read what `inner` reads: its data (pausing `inner` while `outer`'s buffer is full,
 * for `outer`'s `_read` to resume), its end, its error and its close. The two Duplexes the gateway
 * lays over a channel (PacedChannel, and the ingress's OpeningStream in routable.ts) read this way.
 */
export function readThrough(inner: Duplex, outer: Duplex): void {
  inner.on('data', (chunk: Buffer) => {
    if (!outer.push(chunk)) inner.pause();
  });
  inner.on('end', () => outer.push(null));
  inner.on('error', (error: Error) => outer.destroy(error));
  inner.on('close', () => outer.destroy());
}
