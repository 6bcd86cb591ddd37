import type { MuxadoSession } from './session.ts';
import type { MuxadoStream } from './stream.ts';

/**
 * Typed streams (ngrok-rust `muxado/src/typed.rs`): the opener writes a big-endian uint32 stream
 * type as the first 4 bytes, and the acceptor reads it before anything else. The agent protocol
 * uses the type to say what a stream is for (auth, bind, proxy, heartbeat…).
 */

/** The type of the heartbeat stream (`muxado/src/heartbeat.rs`). */
export const HEARTBEAT_STREAM_TYPE = 0xffffffff;

/** Opens a stream of `type`. */
export function openTypedStream(session: MuxadoSession, type: number): MuxadoStream {
  const stream = session.openStream();
  const header = Buffer.allocUnsafe(4);
  header.writeUInt32BE(type >>> 0, 0);
  stream.write(header);
  return stream;
}

/** The type of a stream the peer opened; rejects if it ends before saying. */
export async function readStreamType(stream: MuxadoStream): Promise<number> {
  return (await stream.readPrefix(4)).readUInt32BE(0);
}
