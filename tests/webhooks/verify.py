"""Verifies webhook deliveries with the official Standard Webhooks library for Python.

Reads a JSON array of cases from stdin, each {"secret": "whsec_…", "headers": {…}, "body": "…"},
and prints a JSON array with, for each, {"ok": true} or {"ok": false, "error": "…"}: exactly
what a receiver using this library would accept or refuse.
"""

import json
import sys

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


def verify(case):
    try:
        Webhook(case["secret"]).verify(case["body"].encode(), case["headers"])
        return {"ok": True}
    except WebhookVerificationError as e:
        return {"ok": False, "error": str(e)}


json.dump([verify(c) for c in json.load(sys.stdin)], sys.stdout)
