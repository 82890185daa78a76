"""schemathesis hooks for tests/stack/api_fuzz.sh (loaded through SCHEMATHESIS_HOOKS).

A resumable upload's PATCH body is `application/offset+octet-stream` (tus 1.0): raw bytes, which
schemathesis sends as it sends `application/octet-stream` once told they are the same kind.
"""

import schemathesis

schemathesis.serializer.alias("application/offset+octet-stream", "application/octet-stream")
