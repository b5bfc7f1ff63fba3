"""Objects by key: the interface (``Store``) and the local folder that is the embedded default.

The S3-compatible store of a deployment is ``app.storage.s3.S3Store`` (it needs boto3; core does not).
"""

from zootriage.core.storage.base import (
    Corrupt,
    NotFound,
    StorageError,
    Store,
    content_key,
    feature_entry,
    sample_entry,
)
from zootriage.core.storage.local import LocalStore

__all__ = ["Corrupt", "LocalStore", "NotFound", "StorageError", "Store", "content_key", "feature_entry",
           "sample_entry"]
