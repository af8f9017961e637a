import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { chooseBackend } from "./transport";
import { setBackend } from "./commands";
import { App } from "./App";
import "./styles.css";

// Before anything runs a command: Tauri IPC in the app, HTTP in a browser.
const backend = chooseBackend(window);
setBackend(backend);

const client = new QueryClient({
  defaultOptions: {
    queries: { retry: (count, error) => count < 2 && (error as { retryable?: boolean }).retryable === true, refetchOnWindowFocus: false },
  },
});

const root = document.getElementById("root");
if (root) {
  createRoot(root).render(
    <StrictMode>
      <QueryClientProvider client={client}>
        <App transport={backend.transport} />
      </QueryClientProvider>
    </StrictMode>,
  );
}
