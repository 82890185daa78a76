"""Uploads a file to the api's resumable-upload endpoint with tuspy, the tus project's Python
client: in chunks, each with a SHA-256 Upload-Checksum, stopping half-way and resuming with a
second uploader from the URL the first one created (as a client does after a restart).

usage: upload.py <endpoint> <api key> <file> <chunk size>; prints the upload's URL.
"""

import hashlib
import os
import sys

from tusclient import client
from tusclient.uploader import Uploader


class Sha256Uploader(Uploader):
    # tuspy checksums with sha1 by default; the api supports sha256 only.
    CHECKSUM_ALGORITHM_PAIR = ("sha256", hashlib.sha256)


def main():
    endpoint, key, path, chunk_size = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    tus = client.TusClient(endpoint, headers={"Authorization": f"Bearer {key}"})
    metadata = {"filename": os.path.basename(path)}
    first = Sha256Uploader(
        path, client=tus, chunk_size=chunk_size, metadata=metadata, upload_checksum=True
    )
    half = os.path.getsize(path) // 2
    first.upload(stop_at=half)
    assert first.offset >= half, first.offset
    # A second client, from the URL alone: it asks the server for the offset (HEAD).
    second = Sha256Uploader(
        path, client=tus, url=first.url, chunk_size=chunk_size, upload_checksum=True
    )
    assert second.offset == first.offset, (second.offset, first.offset)
    second.upload()
    print(second.url)


if __name__ == "__main__":
    main()
