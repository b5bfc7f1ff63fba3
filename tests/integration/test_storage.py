"""The storage interface on both backends: a local folder and a real S3-compatible server (moto's,
started on a loopback port). Both must behave the same: atomic, content-checked, idempotent puts."""

from __future__ import annotations

import hashlib
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from pydantic import ValidationError

from tests.integration.servers import S3Server
from zootriage.app.settings import Settings
from zootriage.app.storage import open_store
from zootriage.app.storage.s3 import S3Store
from zootriage.core.storage import Corrupt, LocalStore, NotFound, Store, content_key

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def s3_server() -> Iterator[S3Server]:
    server = S3Server()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "local":
        return LocalStore(tmp_path / "store")
    server = request.getfixturevalue("s3_server")
    request.getfixturevalue("aws_env")
    bucket = f"zt-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=server.url).create_bucket(Bucket=bucket)
    return open_store(f"s3://{bucket}/deploy?endpoint={server.url}", tmp_path / "unused")


def _file(folder: Path, data: bytes) -> tuple[Path, str]:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"f-{uuid.uuid4().hex[:8]}"
    path.write_bytes(data)
    return path, hashlib.sha256(data).hexdigest()


def test_put_get_round_trip_by_content(store: Store, tmp_path: Path) -> None:
    data = b"weights" * 1000
    path, sha = _file(tmp_path / "in", data)
    key = content_key("uploads", sha, ".pt2")
    assert not store.exists(key)
    store.put_file(key, path)
    store.put_file(key, path)  # idempotent
    assert store.exists(key)
    assert store.keys("uploads") == [key]
    got = store.get_file(key, tmp_path / "out" / "copy.pt2")
    assert got.read_bytes() == data
    store.delete(key)
    store.delete(key)  # absent: not an error
    assert not store.exists(key)
    with pytest.raises(NotFound):
        store.get_file(key, tmp_path / "out" / "again.pt2")
    assert not (tmp_path / "out" / "again.pt2").exists()


def test_a_file_that_does_not_match_its_address_is_refused_on_put(store: Store, tmp_path: Path) -> None:
    path, _ = _file(tmp_path / "in", b"real bytes")
    key = content_key("uploads", hashlib.sha256(b"other bytes").hexdigest(), ".pt2")
    with pytest.raises(Corrupt):
        store.put_file(key, path)
    assert not store.exists(key)


def test_bad_keys_are_refused(store: Store, tmp_path: Path) -> None:
    path, _ = _file(tmp_path / "in", b"x")
    for key in ["../etc/passwd", "/abs/key", "uploads/../x", "noslash", "uploads/a b"]:
        with pytest.raises(ValueError, match="bad storage key"):
            store.put_file(key, path)


def test_non_addressed_keys_are_overwritten_whole(store: Store, tmp_path: Path) -> None:
    key = "features/cachekey.npz"
    store.put_bytes(key, b"first", tmp_path / "scratch")
    store.put_bytes(key, b"second version", tmp_path / "scratch")
    assert store.get_file(key, tmp_path / "o.npz").read_bytes() == b"second version"
    assert not list((tmp_path / "scratch").iterdir())


def test_concurrent_puts_and_reads_never_see_half_an_object(store: Store, tmp_path: Path) -> None:
    """Writers replace one key with whole payloads while readers fetch it: every read is one payload."""
    payloads = [bytes([i]) * (256 * 1024) for i in range(4)]
    key = "artefacts/shared.bin"
    store.put_bytes(key, payloads[0], tmp_path / "s0")
    seen: list[bytes] = []
    errors: list[BaseException] = []

    def write(i: int) -> None:
        try:
            for _ in range(5):
                store.put_bytes(key, payloads[i], tmp_path / f"s{i}")
        except BaseException as exc:
            errors.append(exc)

    def read(j: int) -> None:
        try:
            for n in range(5):
                seen.append(store.get_file(key, tmp_path / f"r{j}" / f"{n}.bin").read_bytes())
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
    threads += [threading.Thread(target=read, args=(j,)) for j in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(seen) == 15 and all(s in payloads for s in seen)


def test_a_tampered_s3_object_is_refused_on_get(s3_server: S3Server, aws_env: None, tmp_path: Path) -> None:
    bucket = f"zt-{uuid.uuid4().hex[:12]}"
    client = boto3.client("s3", endpoint_url=s3_server.url)
    client.create_bucket(Bucket=bucket)
    store = S3Store(bucket, endpoint_url=s3_server.url)
    path, sha = _file(tmp_path / "in", b"accepted bytes")
    key = content_key("uploads", sha, ".pt")
    store.put_file(key, path)
    client.put_object(Bucket=bucket, Key=key, Body=b"swapped bytes")
    with pytest.raises(Corrupt):
        store.get_file(key, tmp_path / "out.pt")
    assert not (tmp_path / "out.pt").exists()


def test_storage_urls(tmp_path: Path) -> None:
    assert isinstance(open_store(None, tmp_path), LocalStore)
    assert open_store(f"file://{tmp_path}/x", tmp_path).root == (tmp_path / "x").resolve()  # type: ignore[attr-defined]
    for bad in ["ftp://host/x", "s3:///nobucket"]:
        with pytest.raises(ValueError):
            open_store(bad, tmp_path)
        with pytest.raises(ValidationError, match="storage URL"):
            Settings(storage_url=bad)  # refused at start-up, not when the first job needs the cache


def test_open_local_gives_the_bytes_and_cleans_up(store: Store, tmp_path: Path) -> None:
    store.put_bytes("features/k.npz", b"array bytes", tmp_path / "scratch")
    scratch = tmp_path / "mirror"
    scratch.mkdir()
    with store.open_local("features/k.npz", scratch) as path:
        assert path.read_bytes() == b"array bytes"
    assert not list(scratch.iterdir())
    with pytest.raises(FileNotFoundError), store.open_local("features/absent.npz", scratch):
        pass


def test_a_second_worker_host_reuses_features_through_the_object_store(
    s3_server: S3Server, aws_env: None, digit_programs: dict[str, Path], tmp_path: Path
) -> None:
    """Two workers with their own disks and one S3 store: the second scores from the first's features."""
    from zootriage.app.storage import feature_cache
    from zootriage.core.data.refs import Sampling, parse_dataset_ref
    from zootriage.core.markers import Protocol
    from zootriage.core.scoring import score
    from zootriage.core.zoo.refs import parse_model_ref

    bucket = f"zt-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=s3_server.url).create_bucket(Bucket=bucket)
    url = f"s3://{bucket}/zoo?endpoint={s3_server.url}"
    args = (
        parse_model_ref(f"ckpt:{digit_programs['ccexam']}"),
        parse_dataset_ref("builtin:mnist"),
        Sampling(classes=3, per_class=10, seed=2),
        Protocol(points_per_class=10, n_t=50, seed=0),
    )
    first = score(*args, cache=feature_cache(Settings(storage_url=url, cache_dir=tmp_path / "host1")))
    second = score(*args, cache=feature_cache(Settings(storage_url=url, cache_dir=tmp_path / "host2")))
    assert not first.features_cached and second.features_cached
    assert second.markers["dimension"].value == first.markers["dimension"].value
    keys = S3Store(bucket, prefix="zoo", endpoint_url=s3_server.url).keys("features")
    assert len(keys) == 1 and keys[0].endswith(".npz")
    assert not [p for p in (tmp_path / "host2").rglob("*") if p.is_file()]  # downloads were temporary
