import { describe, expect, it } from "vitest";
import { changesWith, keys } from "./keys";

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
  });
});
