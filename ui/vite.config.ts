import { defineConfig } from "vitest/config";
import react from "@vitejs/plugin-react";

// Relative asset paths: the same build is served by Tauri and by the web mode.
export default defineConfig({
  base: "./",
  plugins: [react()],
  build: { outDir: "dist", emptyOutDir: true, target: "es2022", chunkSizeWarningLimit: 1500 },
  server: { host: "127.0.0.1", port: 5173, strictPort: true },
  test: { include: ["src/**/*.test.{ts,tsx}"], environment: "node" },
});
