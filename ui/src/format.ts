// How numbers, lags, ages and times read in the Studio.

/** A count as people scan it: 999, 1.2k, 10k+ when there may be more than we counted. */
export function formatCount(n: number, more = false): string {
  let text: string;
  if (n < 1000) text = String(n);
  else if (n < 10_000) text = `${(Math.floor(n / 100) / 10).toFixed(1).replace(/\.0$/, "")}k`;
  else if (n < 1_000_000) text = `${Math.floor(n / 1000)}k`;
  else text = `${(Math.floor(n / 100_000) / 10).toFixed(1).replace(/\.0$/, "")}M`;
  return more ? `${text}+` : text;
}

/** Lag in events: "caught up" at zero. */
export function formatLag(lag: number): string {
  if (lag === 0) return "caught up";
  return `${formatCount(lag)} behind`;
}

/** A duration in milliseconds, coarsely: 450 ms, 12 s, 4 min, 3 h, 2 d. */
export function formatAge(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "—";
  if (ms < 0) ms = 0;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${Math.floor(s)} s`;
  const min = s / 60;
  if (min < 60) return `${Math.floor(min)} min`;
  const h = min / 60;
  if (h < 48) return `${Math.floor(h)} h`;
  return `${Math.floor(h / 24)} d`;
}

/** A timestamp relative to now: "in 4 s", "12 min ago". */
export function formatRelative(at: number | null | undefined, now: number): string {
  if (at === null || at === undefined) return "—";
  const delta = at - now;
  return delta >= 0 ? `in ${formatAge(delta)}` : `${formatAge(-delta)} ago`;
}

export function formatTime(at: number | null | undefined): string {
  if (at === null || at === undefined) return "—";
  const d = new Date(at);
  const pad = (n: number, w = 2) => String(n).padStart(w, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
