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

const UNITS: [number, string][] = [
  [86_400, "d"],
  [3_600, "h"],
  [60, "min"],
  [1, "s"],
];

/** A span in its two largest units: 450 ms, 12 s, 3 min 5 s, 23 h 59 min, 2 d 4 h (a zero second unit left out). */
export function formatAge(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "—";
  if (ms < 0) ms = 0;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const seconds = Math.floor(ms / 1000);
  const first = UNITS.findIndex(([size]) => seconds >= size);
  const [size, name] = UNITS[first];
  const whole = Math.floor(seconds / size);
  const next = UNITS[first + 1];
  const rest = next ? Math.floor((seconds % size) / next[0]) : 0;
  return next && rest > 0 ? `${whole} ${name} ${rest} ${next[1]}` : `${whole} ${name}`;
}

/** A timestamp relative to now: "in 4 s", "12 min ago", "now" within a second. */
export function formatRelative(at: number | null | undefined, now: number): string {
  if (at === null || at === undefined) return "—";
  const delta = at - now;
  if (Math.abs(delta) < 1000) return "now";
  return delta > 0 ? `in ${formatAge(delta)}` : `${formatAge(-delta)} ago`;
}

/** A timestamp as a UTC date-time, the same on every operator's screen and in the CLI: 2026-12-07 03:50:12 UTC. */
export function formatTime(at: number | null | undefined): string {
  if (at === null || at === undefined) return "—";
  const d = new Date(at);
  if (Number.isNaN(d.getTime())) return `${at} ms after the epoch`;
  const pad = (n: number, w = 2) => String(n).padStart(w, "0");
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} UTC`;
}

/** Both, as the CLI prints them: "3 min ago (2026-12-07 03:47:12 UTC)". */
export function formatMoment(at: number | null | undefined, now: number): string {
  if (at === null || at === undefined) return "—";
  return `${formatRelative(at, now)} (${formatTime(at)})`;
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
