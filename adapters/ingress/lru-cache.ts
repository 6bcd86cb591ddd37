/** A map that keeps the `size` entries used last: the ingress's caches of compiled policies and certificates. */
export class LruCache<T> {
  readonly #entries = new Map<string, T>();
  readonly #size: number;

  constructor(size: number) {
    this.#size = size;
  }

  /** The value of `key`, made by `make` when it is not kept. */
  get(key: string, make: () => T): T {
    let value = this.#entries.get(key);
    if (value === undefined) value = make();
    else this.#entries.delete(key);
    this.#entries.set(key, value);
    if (this.#entries.size > this.#size) this.#entries.delete(this.#entries.keys().next().value!);
    return value;
  }

  delete(key: string): void {
    this.#entries.delete(key);
  }
}
