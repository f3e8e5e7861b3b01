// Lint rules: typescript-eslint's recommended set, strict about `any`; generated code is not linted.
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["gen/**", "dist/**", "node_modules/**", "data/**", "coverage/**"] },
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
    },
  },
  {
    // The server logs through pino only; tests, scripts and benchmarks may print.
    files: ["src/**/*.ts"],
    rules: { "no-console": "error" },
  },
);
