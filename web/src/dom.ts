// Small helpers every panel uses: an element by id, the status line, HTML escaping.

export const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

/** Says `s` in the header's status line (errors a panel met). */
export function status(s: string) {
  $("status").textContent = s;
}

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}
