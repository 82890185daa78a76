"""Sends refused uploads with httpx, the way a Python client does, and reports what it read.

Usage: refusals.py <base url> <api key> <count> <concurrency> <body bytes>

POSTs `count` multipart uploads of a CSV of about `body bytes` to /api/v1/files, `concurrency` at
a time (one httpx.AsyncClient, its connection pool reused as clients do), and prints one JSON
object: how many answers came back by status and error code, how many carried Retry-After, and
the errors raised instead of an answer (a reset, a protocol error): those are answers lost.
"""

import asyncio
import collections
import json
import sys

import httpx


async def main() -> None:
    base, key, count, concurrency, size = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
    line = b"1,alice,2024-01-01\n"
    body = b"id,name,day\n" + line * max(1, size // len(line))
    answers: collections.Counter = collections.Counter()
    retry_after = 0
    lost: list = []
    gate = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=60) as client:

        async def one(i: int) -> None:
            nonlocal retry_after
            async with gate:
                try:
                    resp = await client.post(
                        "/api/v1/files",
                        headers={"Authorization": f"Bearer {key}"},
                        files={"file": (f"refused-{i}.csv", body, "text/csv")},
                    )
                    code = resp.json().get("error", {}).get("code") if resp.status_code >= 400 else None
                    answers[f"{resp.status_code} {code}"] += 1
                    retry_after += "retry-after" in resp.headers
                except httpx.HTTPError as e:
                    lost.append(f"{type(e).__name__}: {e}")

        await asyncio.gather(*(one(i) for i in range(count)))
    print(json.dumps({"answers": answers, "retry_after": retry_after, "lost": lost}))


asyncio.run(main())
