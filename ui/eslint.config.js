// ESLint for the UI: TypeScript's recommended rules with type information,
// and React's rules of hooks and compiler checks. `npm run lint` allows no
// warning at all.
import js from "@eslint/js";
import reactHooks from "eslint-plugin-react-hooks";
import globals from "globals";
import tseslint from "typescript-eslint";
import { defineConfig } from "eslint/config";

export default defineConfig([
  { ignores: ["dist/", "node_modules/", "src/bindings.ts"] },
  {
    files: ["src/**/*.{ts,tsx}", "vite.config.ts"],
    extends: [js.configs.recommended, tseslint.configs.recommendedTypeChecked, reactHooks.configs.flat.recommended],
    languageOptions: {
      globals: globals.browser,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      // The Studio is reached through ./commands (the backend chosen at start), never the bindings' own Tauri calls.
      "@typescript-eslint/no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: ["**/bindings"],
              importNames: ["commands"],
              allowTypeImports: true,
              message: "Call the Studio through ./commands: it dispatches the generated commands through the chosen backend.",
            },
          ],
        },
      ],
      // A refusal is the Studio's ApiError, thrown as a value (not an Error), as the generated bindings expect.
      "@typescript-eslint/only-throw-error": ["error", { allow: [{ from: "file", name: "ApiError", path: "src/bindings.ts" }] }],
    },
  },
  {
    // The one place that dispatches the generated commands (and its test).
    files: ["src/commands.ts", "src/commands.test.ts"],
    rules: { "@typescript-eslint/no-restricted-imports": "off" },
  },
  {
    // Node scripts run against `a2 serve`.
    files: ["e2e/**/*.mjs", "eslint.config.js"],
    extends: [js.configs.recommended],
    languageOptions: { globals: { ...globals.node, ...globals.browser } },
  },
]);
