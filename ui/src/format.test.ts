import { describe, expect, it } from "vitest";
import { formatAge, formatBytes, formatCount, formatLag, formatRelative } from "./format";

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

  it("puts times before and after now", () => {
    expect(formatRelative(10_000, 6_000)).toBe("in 4 s");
    expect(formatRelative(0, 720_000)).toBe("12 min ago");
    expect(formatRelative(null, 0)).toBe("—");
  });

  it("sizes bytes", () => {
    expect(formatBytes(12)).toBe("12 B");
    expect(formatBytes(2048)).toBe("2.0 KiB");
  });
});
