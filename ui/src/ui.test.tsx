/** @vitest-environment jsdom */
// The confirm dialog every action goes through: nothing runs until the
// confirm button is pressed, cancelling runs nothing, and it runs once.
import { afterEach, describe, expect, it, vi } from "vitest";
import { cleanup, render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { StudioError } from "./api";
import { ConfirmDialog } from "./ui";

afterEach(cleanup);

function dialog(run: () => Promise<string>) {
  const onClose = vi.fn<(changed: boolean) => void>();
  const user = userEvent.setup();
  render(
    <ConfirmDialog title="Clear session" confirm="Clear through 7" danger run={run} onClose={onClose}>
      <p>Session shop/o-1 is cleared through index 7.</p>
    </ConfirmDialog>,
  );
  return { onClose, user };
}

const confirmButton = () => screen.getByRole("button", { name: "Clear through 7" });

describe("the confirm dialog", () => {
  it("names what will change and runs nothing until confirmed", async () => {
    const run = vi.fn(() => Promise.resolve("Cleared shop/o-1 through index 7."));
    const { onClose, user } = dialog(run);
    expect(screen.getByRole("dialog", { name: "Clear session" }).textContent).toContain("cleared through index 7");
    expect(run).not.toHaveBeenCalled();

    await user.click(confirmButton());
    expect(run).toHaveBeenCalledTimes(1);
    expect((await screen.findByTestId("outcome")).textContent).toBe("Cleared shop/o-1 through index 7.");
    expect(onClose).not.toHaveBeenCalled();

    await user.click(screen.getByRole("button", { name: "Close" }));
    expect(onClose).toHaveBeenCalledExactlyOnceWith(true);
    expect(run).toHaveBeenCalledTimes(1);
  });

  it("cancels without running, by the Cancel button or Escape", async () => {
    const run = vi.fn(() => Promise.resolve("done"));
    const { onClose, user } = dialog(run);
    await user.click(screen.getByRole("button", { name: "Cancel" }));
    expect(onClose).toHaveBeenLastCalledWith(false);
    await user.keyboard("{Escape}");
    expect(onClose).toHaveBeenLastCalledWith(false);
    expect(onClose).toHaveBeenCalledTimes(2);
    expect(run).not.toHaveBeenCalled();
  });

  it("runs once: while it runs, neither confirm nor cancel can be pressed", async () => {
    let finish: (outcome: string) => void = () => {};
    const run = vi.fn(() => new Promise<string>((resolve) => (finish = resolve)));
    const { onClose, user } = dialog(run);
    await user.click(confirmButton());
    const working = screen.getByRole("button", { name: "Working…" });
    expect(working).toHaveProperty("disabled", true);
    expect(screen.getByRole("button", { name: "Cancel" })).toHaveProperty("disabled", true);
    await user.click(working);
    await user.click(screen.getByRole("button", { name: "Cancel" }));
    expect(run).toHaveBeenCalledTimes(1);
    expect(onClose).not.toHaveBeenCalled();
    finish("Cleared.");
    expect((await screen.findByTestId("outcome")).textContent).toBe("Cleared.");
  });

  it("shows the Studio's refusal with its code", async () => {
    const run = vi.fn(() => Promise.reject(new StudioError({ code: "READ_ONLY", message: "the store is read-only", retryable: false })));
    const { onClose, user } = dialog(run);
    await user.click(confirmButton());
    const alert = await screen.findByRole("alert");
    expect(alert.textContent).toContain("READ_ONLY");
    expect(alert.textContent).toContain("the store is read-only");
    expect(screen.queryByTestId("outcome")).toBeNull();
    await user.click(screen.getByRole("button", { name: "Close" }));
    expect(onClose).toHaveBeenCalledExactlyOnceWith(true);
  });
});
