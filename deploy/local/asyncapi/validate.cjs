#!/usr/bin/env node
// Parses an AsyncAPI document with the official parser (@asyncapi/parser,
// the one AsyncAPI Studio, the generator and catalogues build on) and prints
// one JSON object on stdout:
//
//   {"parser": "<version>", "document": true|false,
//    "diagnostics": [{"severity": "error"|"warning"|"information"|"hint", "code", "message", "path"}],
//    "messages": [{"channel", "message", "headers": [...], "required": [...]}]}
//
// messages lists, per channel and message, the header names its headers
// schema declares and requires, as the parser resolved them ($refs to the
// JSON Schema files followed). Exit status: 0 when a document was returned
// and no diagnostic has error severity, 1 otherwise, 2 on a usage error.
// Run with NODE_PATH=bin/asyncapi/node_modules (deploy/local/deps.sh
// installs the pinned parser there); schemas/asyncapi_test.go runs it.
'use strict';
const path = require('path');
const { Parser, fromFile } = require('@asyncapi/parser');
const parserVersion = require('@asyncapi/parser/package.json').version;

const severities = ['error', 'warning', 'information', 'hint'];

async function main() {
  const file = process.argv[2];
  if (!file) {
    process.stderr.write('usage: validate.cjs <asyncapi.yaml>\n');
    return 2;
  }
  const parser = new Parser();
  const { document, diagnostics } = await fromFile(parser, path.resolve(file)).parse();
  const out = {
    parser: parserVersion,
    document: Boolean(document),
    diagnostics: diagnostics.map((d) => ({
      severity: severities[d.severity] || String(d.severity),
      code: String(d.code),
      message: d.message,
      path: (d.path || []).join('.'),
    })),
    messages: [],
  };
  if (document) {
    for (const channel of document.channels()) {
      for (const message of channel.messages()) {
        const headers = message.headers();
        out.messages.push({
          channel: channel.id(),
          message: message.id(),
          headers: headers ? Object.keys(headers.properties() || {}).sort() : [],
          required: headers ? [...(headers.required() || [])].sort() : [],
        });
      }
    }
  }
  process.stdout.write(JSON.stringify(out) + '\n');
  return out.document && !out.diagnostics.some((d) => d.severity === 'error') ? 0 : 1;
}

main().then((code) => { process.exitCode = code; }, (err) => {
  process.stderr.write(`asyncapi parser failed: ${err && err.stack ? err.stack : err}\n`);
  process.exitCode = 1;
});
