/**
 * XXH64 (seed 0) as the vendor's `hash.xxhash64` computes it, the 8-byte digest big-endian (its
 * documented example: 'hello' → '26c7827d889f6da3', traffic-policy/macros/index.mdx). The
 * algorithm is Yann Collet's xxHash specification (doc/xxhash_spec.md); BigInt keeps it short, and
 * policy inputs are small.
 */

const MASK = (1n << 64n) - 1n;
const P1 = 0x9e3779b185ebca87n;
const P2 = 0xc2b2ae3d27d4eb4fn;
const P3 = 0x165667b19e3779f9n;
const P4 = 0x85ebca77c2b2ae63n;
const P5 = 0x27d4eb2f165667c5n;

const rotl = (value: bigint, bits: bigint) => ((value << bits) | (value >> (64n - bits))) & MASK;
const round = (acc: bigint, lane: bigint) => (rotl((acc + lane * P2) & MASK, 31n) * P1) & MASK;
const merge = (acc: bigint, lane: bigint) => (((acc ^ round(0n, lane)) * P1 + P4) & MASK);

export function xxhash64(input: Uint8Array): Buffer {
  const view = new DataView(input.buffer, input.byteOffset, input.byteLength);
  const length = input.byteLength;
  let at = 0;
  let hash: bigint;
  if (length >= 32) {
    const lanes = [(P1 + P2) & MASK, P2, 0n, (MASK + 1n - P1) & MASK];
    for (; at + 32 <= length; at += 32) for (let i = 0; i < 4; i++) lanes[i] = round(lanes[i]!, view.getBigUint64(at + i * 8, true));
    hash = (rotl(lanes[0]!, 1n) + rotl(lanes[1]!, 7n) + rotl(lanes[2]!, 12n) + rotl(lanes[3]!, 18n)) & MASK;
    for (const lane of lanes) hash = merge(hash, lane);
  } else hash = P5;
  hash = (hash + BigInt(length)) & MASK;
  for (; at + 8 <= length; at += 8) hash = (rotl(hash ^ round(0n, view.getBigUint64(at, true)), 27n) * P1 + P4) & MASK;
  if (at + 4 <= length) {
    hash = (rotl(hash ^ ((BigInt(view.getUint32(at, true)) * P1) & MASK), 23n) * P2 + P3) & MASK;
    at += 4;
  }
  for (; at < length; at++) hash = (rotl(hash ^ ((BigInt(input[at]!) * P5) & MASK), 11n) * P1) & MASK;
  hash ^= hash >> 33n;
  hash = (hash * P2) & MASK;
  hash ^= hash >> 29n;
  hash = (hash * P3) & MASK;
  hash ^= hash >> 32n;
  const out = Buffer.alloc(8);
  out.writeBigUInt64BE(hash);
  return out;
}
