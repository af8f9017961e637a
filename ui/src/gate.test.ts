import { describe, expect, it } from "vitest";
import { defaultReadOnly, gate } from "./gate";

describe("read-only gating", () => {
  it("disables every action on a read-only connection, saying why", () => {
    for (const action of ["redrive", "consume", "clear", "demo"] as const) {
      const result = gate({ read_only: true, hosts_demo: true }, action);
      expect(result.allowed).toBe(false);
      if (!result.allowed) expect(result.reason).toMatch(/read-only/i);
    }
  });

  it("allows actions read-write, but running a consumer only where the app hosts it", () => {
    expect(gate({ read_only: false, hosts_demo: false }, "redrive")).toEqual({ allowed: true });
    expect(gate({ read_only: false, hosts_demo: false }, "consume.run").allowed).toBe(false);
    expect(gate({ read_only: false, hosts_demo: true }, "consume.run")).toEqual({ allowed: true });
    expect(gate(null, "clear").allowed).toBe(false);
  });

  it("opens remote Postgres read-only by default", () => {
    expect(defaultReadOnly("postgres://ops@db.example.com/app")).toBe(true);
    expect(defaultReadOnly("postgresql://10.0.0.5:5432/app")).toBe(true);
    expect(defaultReadOnly("postgres://127.0.0.1:5432/test")).toBe(false);
    expect(defaultReadOnly("postgres://me:pw@localhost/test")).toBe(false);
    expect(defaultReadOnly("postgres:///test?host=/run/postgresql")).toBe(false);
    expect(defaultReadOnly("sqlite:.a2/dev.sqlite")).toBe(false);
  });
});
