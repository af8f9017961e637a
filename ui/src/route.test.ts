import { describe, expect, it } from "vitest";
import { href, parseRoute } from "./route";

describe("deep links", () => {
  it("round-trip contract, session, tab and index", () => {
    const route = { view: "session", contract: "shop", session: "order 7/a", tab: "consumers", index: 12 } as const;
    expect(parseRoute(href(route))).toEqual(route);
    expect(parseRoute("#/sessions/shop")).toEqual({ view: "sessions", contract: "shop" });
    expect(parseRoute("#/session/shop/o1/nonsense")).toMatchObject({ tab: "events" });
    expect(parseRoute("")).toEqual({ view: "overview" });
  });
  it("round-trip a search, its payload JSON intact", () => {
    const route = { view: "search", contract: "shop", payload: '{"customer": "c-7 & co"}', type: "order.placed", id: "" } as const;
    expect(parseRoute(href(route))).toEqual(route);
    expect(parseRoute("#/search/")).toEqual({ view: "search", contract: "", payload: "", type: "", id: "" });
  });
});
