// An indexed binary min-heap: push, peek, pop, remove and re-key of any member in
// O(log n). The eviction order of each cache type is kept in two of these
// (docs/decisions/filecache.md, "Eviction index").
export class IndexedHeap<T> {
  private items: T[] = [];
  private pos = new Map<T, number>();

  constructor(private readonly less: (a: T, b: T) => boolean) {}

  get size(): number {
    return this.items.length;
  }

  has(item: T): boolean {
    return this.pos.has(item);
  }

  peek(): T | undefined {
    return this.items[0];
  }

  push(item: T): void {
    if (this.pos.has(item)) return this.update(item);
    this.items.push(item);
    this.pos.set(item, this.items.length - 1);
    this.up(this.items.length - 1);
  }

  pop(): T | undefined {
    const top = this.items[0];
    if (top !== undefined) this.remove(top);
    return top;
  }

  remove(item: T): boolean {
    const i = this.pos.get(item);
    if (i === undefined) return false;
    const last = this.items.pop()!;
    this.pos.delete(item);
    if (i < this.items.length) {
      this.items[i] = last;
      this.pos.set(last, i);
      this.down(i);
      this.up(this.pos.get(last)!);
    }
    return true;
  }

  /** Restores the order after the item's key changed. */
  update(item: T): void {
    const i = this.pos.get(item);
    if (i === undefined) return;
    this.up(i);
    this.down(this.pos.get(item)!);
  }

  clear(): void {
    this.items = [];
    this.pos.clear();
  }

  private swap(i: number, j: number) {
    const a = this.items[i]!;
    const b = this.items[j]!;
    this.items[i] = b;
    this.items[j] = a;
    this.pos.set(b, i);
    this.pos.set(a, j);
  }

  private up(i: number) {
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(this.items[i]!, this.items[p]!)) break;
      this.swap(i, p);
      i = p;
    }
  }

  private down(i: number) {
    const n = this.items.length;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < n && this.less(this.items[l]!, this.items[m]!)) m = l;
      if (r < n && this.less(this.items[r]!, this.items[m]!)) m = r;
      if (m === i) break;
      this.swap(i, m);
      i = m;
    }
  }
}
