import { describe, expect, it } from "vitest";
import { changesWith, keys, touchedBy, type Change } from "./keys";

describe("query keys", () => {
  it("a store change refreshes every read but the connection and the profiles", () => {
    expect(changesWith(keys.connection())).toBe(false);
    expect(changesWith(keys.profiles())).toBe(false);
    expect(changesWith(keys.connectionDefault("memory:"))).toBe(false);
    for (const key of [keys.contracts(), keys.heads("shop", "order-1"), keys.events("shop", "order-1", 0), keys.deadLetters(null, null, "", null), keys.attempts("shop", "order-1", "mailer", 1)]) {
      expect(changesWith(key)).toBe(true);
    }
  });

  it("a session's reads are told apart by contract and session", () => {
    expect(keys.heads("shop", "a")).not.toEqual(keys.heads("shop", "b"));
    expect(keys.events("shop", "a", 0)).not.toEqual(keys.events("shop", "a", 1));
    expect(keys.deadLetterEvent("shop", "a", 3)).not.toEqual(keys.deadLetterEvent("shop", "b", 3));
  });

  it("an action refreshes what it changes, and not the connection", () => {
    const redrive = (key: readonly unknown[]) => touchedBy("redrive", key);
    expect(redrive(keys.deadLetters(null, null, "", null))).toBe(true);
    expect(redrive(keys.deadLetterGroups(null))).toBe(true);
    expect(redrive(keys.heads("shop", "a"))).toBe(true);
    expect(redrive(keys.session("shop", "a"))).toBe(true);
    expect(redrive(keys.consumerOverview())).toBe(true);
    expect(redrive(keys.pauses())).toBe(false);

    expect(touchedBy("consume", keys.heads("shop", "a"))).toBe(true);
    expect(touchedBy("consume", keys.events("shop", "a", 0))).toBe(true);
    expect(touchedBy("clear", keys.events("shop", "a", 0))).toBe(true);
    expect(touchedBy("clear", keys.snapshots("shop", "a"))).toBe(true);
    expect(touchedBy("clear", keys.session("shop", "a"))).toBe(true);
    expect(touchedBy("pause", keys.pauses())).toBe(true);
    expect(touchedBy("pause", keys.consumerOverview())).toBe(true);
    expect(touchedBy("pause", keys.deadLetters(null, null, "", null))).toBe(false);
    expect(touchedBy("profiles", keys.profiles())).toBe(true);

    for (const change of ["redrive", "consume", "clear", "pause", "profiles"] as Change[]) {
      expect(touchedBy(change, keys.connection())).toBe(false);
      expect(touchedBy(change, keys.audit())).toBe(change !== "profiles");
    }
  });
});
