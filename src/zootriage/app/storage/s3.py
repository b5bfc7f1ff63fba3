"""A deployment's store: an S3-compatible object store (AWS S3, MinIO, Ceph, ...) through boto3.

Objects are ``<prefix><key>`` in one bucket. S3 makes a completed PUT visible whole or not at all, so a
reader never sees half an object; downloads go to a temporary file renamed over the destination.
Content-addressed objects are checked after download (``app.storage.base.verify``) before anyone opens
them, so a tampered bucket cannot hand a worker bytes other than the ones that were accepted.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from zootriage.core.storage.base import NotFound, StorageError, Store, addressed_sha256, check_key, verify


class S3Store(Store):
    def __init__(
        self,
        bucket: str,
        *,
        prefix: str = "",
        endpoint_url: str | None = None,
        region: str | None = None,
        client: Any = None,
    ) -> None:
        import boto3  # the client only where a deployment configures S3
        from botocore.config import Config

        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self.client = client or boto3.client(
            "s3",
            endpoint_url=endpoint_url,
            region_name=region,
            config=Config(
                retries={"max_attempts": 5, "mode": "standard"}, connect_timeout=5, read_timeout=60
            ),
        )

    def _name(self, key: str) -> str:
        return self.prefix + check_key(key)

    def put_file(self, key: str, path: Path, *, consume: bool = False) -> None:
        verify(key, path)
        if addressed_sha256(key) is not None and self.exists(key):
            return  # content-addressed: the same name holds the same bytes
        self.client.upload_file(str(path), self.bucket, self._name(key))

    def get_file(self, key: str, dest: Path) -> Path:
        from botocore.exceptions import ClientError

        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
        os.close(fd)
        tmp = Path(name)
        try:
            try:
                self.client.download_file(self.bucket, self._name(key), str(tmp))
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") in {"404", "NoSuchKey", "NotFound"}:
                    raise NotFound(f"no stored object {key}") from None
                raise StorageError(f"object store error for {key}: {exc}") from exc
            verify(key, tmp)
            os.replace(tmp, dest)
        finally:
            tmp.unlink(missing_ok=True)
        return dest

    def exists(self, key: str) -> bool:
        from botocore.exceptions import ClientError

        try:
            self.client.head_object(Bucket=self.bucket, Key=self._name(key))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in {"404", "NoSuchKey", "NotFound"}:
                return False
            raise StorageError(f"object store error for {key}: {exc}") from exc
        return True

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self._name(key))

    def keys(self, namespace: str) -> list[str]:
        start = self.prefix + check_key(f"{namespace}/x")[:-1]
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=start)
        return [obj["Key"][len(self.prefix):] for page in pages for obj in page.get("Contents", [])]
