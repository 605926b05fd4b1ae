// @ts-check
// A small rule set on purpose: the recommended rules of eslint and typescript-eslint, plus the
// few that catch real bugs in this codebase (floating promises lose errors in Workers; unused
// values hide dead code). Style is prettier's job (`npm run format`).
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  {
    ignores: [
      "node_modules/",
      "dist/",
      ".wrangler/",
      "bench/results/",
      "functions/worker-configuration.d.ts",
      "examples/**/node_modules/",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none" },
      ],
      "@typescript-eslint/consistent-type-imports": ["error", { fixStyle: "inline-type-imports" }],
      "no-control-regex": "off",
      eqeqeq: ["error", "always"],
    },
  },
  // tests and tools read JSON bodies of every shape
  { files: ["test/**", "bench/**", "dev/**"], rules: { "@typescript-eslint/no-explicit-any": "off" } },
  {
    files: ["**/*.js", "**/*.mjs"],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      globals: { console: "readonly", process: "readonly", URL: "readonly" },
    },
  },
  // The dashboard's browser modules: JavaScript with JSDoc types, type-checked against the DOM by
  // functions/dashboard/client/tsconfig.json (tsc reports unknown names, so no browser-globals list).
  {
    files: ["functions/dashboard/client/*.browser.js"],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: { "no-undef": "off", "@typescript-eslint/no-floating-promises": "error" },
  },
);
