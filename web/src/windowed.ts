// Lists that build only the rows in sight: the connection list (a table, `VirtualRows`) and
// the events list (`VirtualList`). Shared here because both panels scroll thousands of rows.

/**
 * The rows in sight of a scrolled list of equal-height rows, and a screenful either side: a
 * trace may hold thousands of connections, and a connection thousands of events; building them
 * all made the frame that listed them take 100–190 ms on a five-million-packet connection.
 * A scroll or a resize of `scroller` renders the rows then in sight; subclasses put them in.
 */
export abstract class Windowed<T> {
  protected items: T[] = [];
  private first = -1;
  private last = -1;
  private height = 0;
  /** scrollTop as of the last scroll event (reading it from the element may lay the page out). */
  protected scrolled = 0;
  private queued = false;

  constructor(scroller: HTMLElement, protected rowH: number) {
    // Scroll events come once per frame, before its callbacks: the rows are in for that frame.
    scroller.addEventListener("scroll", () => {
      this.scrolled = scroller.scrollTop;
      this.render();
    }, { passive: true });
    new ResizeObserver(() => {
      this.height = scroller.clientHeight;
      this.queue();
    }).observe(scroller);
  }

  set(items: T[]) {
    this.items = items;
    this.first = this.last = -1;
    this.render();
  }

  private queue() {
    if (this.queued) return;
    this.queued = true;
    requestAnimationFrame(() => {
      this.queued = false;
      this.render();
    });
  }

  /** Builds the rows now to be in sight, unless they all are already (most scroll steps). */
  private render() {
    const n = this.items.length;
    const seen = Math.ceil((this.height || 400) / this.rowH);
    const top = Math.min(Math.floor(this.scrolled / this.rowH), Math.max(0, n - seen));
    if (this.first >= 0 && top >= this.first && Math.min(n, top + seen + 1) <= this.last) return;
    this.first = Math.max(0, top - seen);
    this.last = Math.min(n, top + 2 * seen + 1);
    this.place(this.first, this.last);
  }

  /** Shows rows `first..last` of `items` in place of those shown before. */
  protected abstract place(first: number, last: number): void;
}

/** A table body as a `Windowed` list: padding rows stand for the rows not built. */
export class VirtualRows<T> extends Windowed<T> {
  private readonly above = document.createElement("tr");
  private readonly below = document.createElement("tr");
  private measured = false;

  constructor(scroller: HTMLElement, private body: HTMLElement, cols: number, private row: (item: T, index: number) => HTMLElement) {
    super(scroller, 21);
    for (const pad of [this.above, this.below]) {
      pad.className = "pad";
      pad.setAttribute("aria-hidden", "true");
      const td = document.createElement("td");
      td.colSpan = cols;
      pad.append(td);
    }
  }

  protected place(first: number, last: number) {
    const n = this.items.length;
    const rows: HTMLElement[] = [];
    for (let i = first; i < last; i++) rows.push(this.row(this.items[i], i));
    (this.above.firstChild as HTMLElement).style.height = `${first * this.rowH}px`;
    (this.below.firstChild as HTMLElement).style.height = `${(n - last) * this.rowH}px`;
    this.above.hidden = first === 0;
    this.below.hidden = last === n;
    this.body.replaceChildren(this.above, ...rows, this.below);
    // The rows' height (set by CSS and the font), read once (a layout): then drawn again with it.
    if (!this.measured && rows.length) {
      this.measured = true;
      const h = rows[0].getBoundingClientRect().height || this.rowH;
      if (h !== this.rowH) {
        this.rowH = h;
        this.set(this.items);
      }
    }
  }
}

/**
 * A list as a `Windowed` one: rows have one fixed height (CSS `--row`), so the scroll height
 * and each row's place follow from the count.
 */
export class VirtualList<T> extends Windowed<T> {
  private readonly spacer = document.createElement("li");

  constructor(private el: HTMLElement, private row: (item: T, i: number) => HTMLElement) {
    super(el, parseFloat(getComputedStyle(el).getPropertyValue("--row")) || 16);
    this.spacer.className = "spacer";
    this.spacer.setAttribute("aria-hidden", "true");
  }

  set(items: T[]) {
    if (this.scrolled) this.el.scrollTop = this.scrolled = 0;
    this.spacer.style.height = `${items.length * this.rowH}px`;
    this.el.replaceChildren(this.spacer);
    super.set(items);
  }

  protected place(first: number, last: number) {
    const rows: HTMLElement[] = [];
    for (let i = first; i < last; i++) {
      const r = this.row(this.items[i], i);
      r.style.top = `${i * this.rowH}px`;
      rows.push(r);
    }
    this.el.replaceChildren(this.spacer, ...rows);
  }
}
