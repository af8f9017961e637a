// Render a piece of the Studio as the app would: a query client, the open
// connection, and a fake Studio behind the commands.
import type { ReactElement } from "react";
import { render } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import type { ConnectionInfo } from "../bindings";
import { setBackend } from "../commands";
import { ConnectionContext } from "../ui";
import type { FakeStudio } from "./fakeStudio";

export function renderWithStudio(ui: ReactElement, { studio, connection }: { studio: FakeStudio; connection: ConnectionInfo | null }) {
  setBackend(studio);
  const client = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  const user = userEvent.setup();
  const rendered = render(
    <QueryClientProvider client={client}>
      <ConnectionContext.Provider value={connection}>{ui}</ConnectionContext.Provider>
    </QueryClientProvider>,
  );
  return { ...rendered, user, client };
}
