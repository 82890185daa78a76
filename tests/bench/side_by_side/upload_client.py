"""Uploads N small CSVs at concurrency C with httpx, as one tenant or several in turn, and prints what the api and the worker did.

Run by tests/bench/side_by_side/uploads.sh (one stack, several builds alternated). Prints one
JSON line: uploads/s (first request to last answer), tasks/s end to end (first request until
every task is final, read from Postgres), and the answers' p50/p99 in ms.
"""

import asyncio
import json
import subprocess
import sys
import time

import httpx

CSV = "id,name,amount,date\n" + "".join(
    f"{i},customer {i},{i * 10}.50,2024-01-{i:02d}\n" for i in range(1, 21)
)


def final_tasks(psql: list[str]) -> int:
    out = subprocess.run(
        psql + ["-tAc", "SELECT count(*) FROM tasks WHERE status IN ('COMPLETED', 'FAILED')"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(out.stdout.strip())


async def main() -> None:
    api, keys, n, concurrency = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3]), int(sys.argv[4])
    wait_for_tasks, psql = sys.argv[5] == "1", sys.argv[6:]
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    latencies: list[float] = []
    failures = 0
    async with httpx.AsyncClient(
        base_url=api, limits=limits, timeout=60
    ) as client:
        queue: asyncio.Queue[int] = asyncio.Queue()
        for i in range(n):
            queue.put_nowait(i)

        async def one() -> None:
            nonlocal failures
            while not queue.empty():
                i = queue.get_nowait()
                t0 = time.perf_counter()
                resp = await client.post(
                    "/api/v1/files",
                    files={"file": (f"b-{i}.csv", CSV, "text/csv")},
                    headers={"Authorization": f"Bearer {keys[i % len(keys)]}"},
                )
                latencies.append((time.perf_counter() - t0) * 1000)
                if resp.status_code != 202:
                    failures += 1

        started = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(concurrency)))
        uploaded = time.perf_counter() - started
    # Polled, not waited on: a benchmark's end condition, read every 20 ms.
    while wait_for_tasks and final_tasks(psql) < n - failures:
        await asyncio.sleep(0.02)
    finished = time.perf_counter() - started
    latencies.sort()
    print(
        json.dumps(
            {
                "uploads_per_s": round(n / uploaded, 1),
                "tasks_per_s": round(n / finished, 1) if wait_for_tasks else None,
                "p50_ms": round(latencies[len(latencies) // 2], 1),
                "p99_ms": round(latencies[int(len(latencies) * 0.99)], 1),
                "failures": failures,
            }
        )
    )


asyncio.run(main())
