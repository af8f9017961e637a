import { describe, expect, it } from "vitest";
import { formatAge, formatBytes, formatCount, formatLag, formatMoment, formatRelative, formatTime } from "./format";

describe("formatting", () => {
  it("counts compactly, with + when there may be more", () => {
    expect(formatCount(0)).toBe("0");
    expect(formatCount(999)).toBe("999");
    expect(formatCount(1000)).toBe("1k");
    expect(formatCount(1250)).toBe("1.2k");
    expect(formatCount(10_000, true)).toBe("10k+");
    expect(formatCount(123_456)).toBe("123k");
    expect(formatCount(1_000_000)).toBe("1M");
    expect(formatCount(2_550_000)).toBe("2.5M");
  });

  it("says caught up at zero lag", () => {
    expect(formatLag(0)).toBe("caught up");
    expect(formatLag(3)).toBe("3 behind");
    expect(formatLag(45_000)).toBe("45k behind");
  });

  it("reads ages coarsely and never negative", () => {
    expect(formatAge(null)).toBe("—");
    expect(formatAge(-5)).toBe("0 ms");
    expect(formatAge(450)).toBe("450 ms");
    expect(formatAge(12_300)).toBe("12 s");
    expect(formatAge(4 * 60_000 + 1)).toBe("4 min");
    expect(formatAge(3 * 3_600_000)).toBe("3 h");
    expect(formatAge(3 * 86_400_000)).toBe("3 d");
  });

  it("says a span in its two largest units", () => {
    expect(formatAge(999)).toBe("999 ms");
    expect(formatAge(1000)).toBe("1 s");
    expect(formatAge(59_999)).toBe("59 s");
    expect(formatAge(185_000)).toBe("3 min 5 s");
    expect(formatAge(7_200_000)).toBe("2 h");
    expect(formatAge(86_398_000)).toBe("23 h 59 min");
    expect(formatAge(187_200_000)).toBe("2 d 4 h");
  });

  it("puts times before and after now", () => {
    expect(formatRelative(10_000, 6_000)).toBe("in 4 s");
    expect(formatRelative(0, 720_000)).toBe("12 min ago");
    expect(formatRelative(null, 0)).toBe("—");
    expect(formatRelative(5_999, 5_000)).toBe("now");
    expect(formatRelative(4_001, 5_000)).toBe("now");
    expect(formatRelative(86_398_000, 0)).toBe("in 23 h 59 min");
  });

  it("names a moment relative and in UTC", () => {
    // 2026-12-07 03:50:12 UTC.
    const now = 1_796_615_412_000;
    expect(formatTime(now)).toBe("2026-12-07 03:50:12 UTC");
    expect(formatTime(0)).toBe("1970-01-01 00:00:00 UTC");
    expect(formatTime(Number.MAX_SAFE_INTEGER)).toBe(`${Number.MAX_SAFE_INTEGER} ms after the epoch`);
    expect(formatMoment(now - 180_000, now)).toBe("3 min ago (2026-12-07 03:47:12 UTC)");
    expect(formatMoment(now + 86_398_000, now)).toBe("in 23 h 59 min (2026-12-08 03:50:10 UTC)");
    expect(formatMoment(now, now)).toBe("now (2026-12-07 03:50:12 UTC)");
    expect(formatMoment(null, now)).toBe("—");
  });

  it("sizes bytes", () => {
    expect(formatBytes(12)).toBe("12 B");
    expect(formatBytes(2048)).toBe("2.0 KiB");
  });
});
