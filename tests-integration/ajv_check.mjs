// Independent peer check: validates the generated JSON Schema artifact with
// Ajv (draft 2020-12, strict) against the committed fixtures.
//
//   node tests-integration/ajv_check.mjs <protocol.schema.json> <schemas/1.0 dir>
//
// <schemas/1.0 dir> holds fixtures/accepted/*.json, fixtures/rejected/*.json
// and manifest.json (the code each rejected fixture must produce, and whether
// ajv can see the problem: "rejects", or "runtime_only" with the reason).
// Every accepted fixture must validate (and a response with a result also
// against $defs/<method>.result of its paired request); every "rejects"
// fixture must fail; every "runtime_only" fixture that JSON.parse reads must
// validate (else the rule is schema-expressible: relabel it "rejects"); every
// rejected fixture must be listed exactly once, each entry with a non-empty
// "why".
// Prints a JSON summary; exits 1 on any failure, 2 on bad usage.
import { readFileSync, readdirSync, existsSync } from "node:fs";
import { join } from "node:path";
import Ajv2020 from "ajv/dist/2020.js";

const [schemaPath, schemasDir] = process.argv.slice(2);
if (!schemaPath || !schemasDir) {
  console.error("usage: node ajv_check.mjs <protocol.schema.json> <schemas/1.0 dir>");
  process.exit(2);
}

const failures = [];
const summary = {
  strict: true,
  accepted: 0,
  results: 0,
  rejected: 0,
  runtime_only: 0,
  runtime_only_parsed: 0,
  runtime_only_unparseable: 0,
};

const schema = JSON.parse(readFileSync(schemaPath, "utf8"));

// Strict mode only: any strict-mode problem in the generated document is a
// failure, never a silent fallback.
function compile() {
  const warnings = [];
  const logger = {
    log() {},
    warn: (...args) => warnings.push(args.join(" ")),
    error: (...args) => warnings.push(args.join(" ")),
  };
  const ajv = new Ajv2020({ strict: true, allErrors: true, logger });
  ajv.addSchema(schema);
  const root = ajv.getSchema(schema.$id);
  if (!root) throw new Error(`schema ${schema.$id} did not compile`);
  // Compile every definition now so strict problems anywhere surface here.
  for (const name of Object.keys(schema.$defs || {})) ajv.getSchema(`${schema.$id}#/$defs/${name}`);
  if (warnings.length > 0) throw new Error(`strict warnings: ${warnings.join("; ")}`);
  return { ajv, root };
}

let ajv, validateRoot;
try {
  ({ ajv, root: validateRoot } = compile());
} catch (e) {
  console.log(JSON.stringify({ ok: false, ...summary, compile_error: String(e.message || e) }, null, 2));
  process.exit(1);
}

const resultValidators = new Map();
function resultValidator(method) {
  const name = `${method.replaceAll("/", ".")}.result`;
  if (!resultValidators.has(name)) {
    const v = ajv.getSchema(`${schema.$id}#/$defs/${name}`);
    if (!v) throw new Error(`no $defs/${name} in the schema`);
    resultValidators.set(name, v);
  }
  return resultValidators.get(name);
}

const errs = (v) => (v.errors || []).map((e) => `${e.instancePath} ${e.message}`);

// -- accepted ---------------------------------------------------------------
const acceptedDir = join(schemasDir, "fixtures", "accepted");
const files = readdirSync(acceptedDir).filter((f) => f.endsWith(".json")).sort();
for (const file of files) {
  const message = JSON.parse(readFileSync(join(acceptedDir, file), "utf8"));
  summary.accepted++;
  if (!validateRoot(message)) {
    failures.push({ file, expected: "valid", errors: errs(validateRoot) });
  }
  if (file.endsWith(".response.json") && "result" in message) {
    const requestFile = file.replace(/\.response\.json$/, ".request.json");
    if (!existsSync(join(acceptedDir, requestFile))) {
      failures.push({ file, expected: `paired request ${requestFile}` });
      continue;
    }
    const request = JSON.parse(readFileSync(join(acceptedDir, requestFile), "utf8"));
    summary.results++;
    try {
      const v = resultValidator(request.method);
      if (!v(message.result)) {
        failures.push({ file, expected: `valid ${request.method} result`, errors: errs(v) });
      }
    } catch (e) {
      failures.push({ file, expected: "result definition", errors: [String(e.message || e)] });
    }
  }
}

// -- rejected ---------------------------------------------------------------
const rejectedDir = join(schemasDir, "fixtures", "rejected");
const manifest = JSON.parse(readFileSync(join(schemasDir, "manifest.json"), "utf8"));
const listed = new Map();
for (const entry of manifest) listed.set(entry.file, (listed.get(entry.file) || 0) + 1);
for (const [file, n] of listed) {
  if (n > 1) failures.push({ file, expected: "listed once in manifest.json", got: n });
}
for (const file of readdirSync(rejectedDir).filter((f) => f.endsWith(".json")).sort()) {
  if (!listed.has(file)) failures.push({ file, expected: "an entry in manifest.json" });
}
for (const entry of manifest) {
  if (typeof entry.why !== "string" || entry.why.trim() === "") {
    failures.push({ file: entry.file, expected: "a non-empty why in manifest.json", got: entry.why });
  }
  if (entry.ajv === "runtime_only") {
    // Runtime-only means the schema cannot see the problem. When the file
    // is JSON that JSON.parse reads, the schema must therefore ACCEPT it;
    // if ajv rejects it, the rule is schema-expressible after all and the
    // entry must say "rejects". (Files JSON.parse refuses: not JSON at all,
    // nothing for a schema to judge.)
    summary.runtime_only++;
    let message;
    try {
      message = JSON.parse(readFileSync(join(rejectedDir, entry.file), "utf8"));
    } catch {
      summary.runtime_only_unparseable++;
      continue;
    }
    summary.runtime_only_parsed++;
    if (!validateRoot(message)) {
      failures.push({
        file: entry.file,
        expected: "accepted by ajv (runtime_only)",
        got: "rejected: schema-expressible: relabel as rejects",
        code: entry.code,
        errors: errs(validateRoot),
      });
    }
    continue;
  }
  if (entry.ajv !== "rejects") {
    failures.push({ file: entry.file, expected: "ajv rejects|runtime_only", got: entry.ajv });
    continue;
  }
  summary.rejected++;
  let message;
  try {
    message = JSON.parse(readFileSync(join(rejectedDir, entry.file), "utf8"));
  } catch (e) {
    failures.push({ file: entry.file, expected: "parseable JSON", errors: [String(e.message || e)] });
    continue;
  }
  if (validateRoot(message)) {
    failures.push({ file: entry.file, expected: "rejected", code: entry.code, got: "valid" });
  }
}

const ok = failures.length === 0;
console.log(JSON.stringify({ ok, ...summary, failures }, null, 2));
process.exit(ok ? 0 : 1);
