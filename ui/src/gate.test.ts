import { describe, expect, it } from "vitest";
import { gate } from "./gate";

describe("read-only gating", () => {
  it("disables every action on a read-only connection, saying why", () => {
    for (const action of ["redrive", "consume", "clear", "demo"] as const) {
      const result = gate({ read_only: true, hosts_demo: true }, action);
      expect(result.allowed).toBe(false);
      if (!result.allowed) expect(result.reason).toMatch(/read-only/i);
    }
  });

  it("disables every action on a replica, even one that claims read-write", () => {
    for (const action of ["redrive", "consume", "consume.run", "clear", "demo", "pause"] as const) {
      const result = gate({ read_only: false, hosts_demo: true, replica: true }, action);
      expect(result.allowed).toBe(false);
      if (!result.allowed) expect(result.reason).toMatch(/replica.*primary/i);
    }
  });

  it("allows actions read-write, but running a consumer only where the app hosts it", () => {
    expect(gate({ read_only: false, hosts_demo: false }, "redrive")).toEqual({ allowed: true });
    expect(gate({ read_only: false, hosts_demo: false }, "consume.run").allowed).toBe(false);
    expect(gate({ read_only: false, hosts_demo: true }, "consume.run")).toEqual({ allowed: true });
    expect(gate(null, "clear").allowed).toBe(false);
  });
});
