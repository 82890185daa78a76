"""Reads what an Azure Event Grid topic endpoint was sent with the CloudEvents SDK for Python (PyPI
`cloudevents`), as a consumer of the topic would: each case on stdin is {"headers", "body"}; prints
one verdict per case, {"ok": true, "attributes": {...}, "data": ...} or {"ok": false, "error"}."""

import json
import sys

from cloudevents.v1.http import from_http

verdicts = []
for case in json.load(sys.stdin):
    try:
        event = from_http(case["headers"], case["body"])
        attributes = {k: str(v) for k, v in event.get_attributes().items()}
        verdicts.append({"ok": True, "attributes": attributes, "data": event.get_data()})
    except Exception as e:  # a refusal is the verdict, whatever the SDK raises
        verdicts.append({"ok": False, "error": f"{type(e).__name__}: {e}"})
json.dump(verdicts, sys.stdout)
