import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { installTransport } from "./transport";
import { App } from "./App";
import "./styles.css";

// Before anything calls the bindings: Tauri IPC in the app, HTTP in a browser.
const transport = installTransport(window as Window & { __TAURI_INTERNALS__?: never });

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
        <App transport={transport} />
      </QueryClientProvider>
    </StrictMode>,
  );
}
