// Verifies webhook deliveries with the official Standard Webhooks library for JavaScript (npm
// `standardwebhooks`, pinned in the root package.json). Reads a JSON array of cases from stdin,
// each {"secret": "whsec_…", "headers": {…}, "body": "…"}, and prints a JSON array with, for
// each, {"ok": true} or {"ok": false, "error": "…"}: what a receiver using it would accept.
import standardwebhooks from "standardwebhooks";

const { Webhook } = standardwebhooks;

let input = "";
for await (const chunk of process.stdin) input += chunk;
const results = JSON.parse(input).map(({ secret, headers, body }) => {
  try {
    new Webhook(secret).verify(body, headers);
    return { ok: true };
  } catch (e) {
    return { ok: false, error: String(e.message ?? e) };
  }
});
process.stdout.write(JSON.stringify(results));
