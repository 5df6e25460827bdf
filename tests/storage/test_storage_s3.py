"""S3Store against a real S3 server (SeaweedFS on loopback, tests/s3_support.py).

Every count a test checks is checked against the server's own counters too:
a request hotset says it made is a GET the server answered.
"""

from __future__ import annotations

import os
import pickle
import sys
from pathlib import Path

import pytest

from hotset.errors import HotsetError, StorageError
from hotset.storage import open_store
from hotset.storage.ranges import range_requests, read_ranges
from hotset.storage.retry import RetryingStore
from hotset.storage.s3_store import S3Store
from s3_support import FaultProxy, S3Bucket

BLOB = bytes(range(256)) * 40  # 10,240 bytes, every offset's byte known


def _store(bucket: S3Bucket, prefix: str = "data") -> S3Store:
    store = open_store(bucket.url(prefix))
    assert isinstance(store, S3Store)
    return store


def test_s3_reads_sizes_lists_and_names_a_missing_key(s3_bucket: S3Bucket) -> None:
    s3_bucket.put("data/a/x.bin", BLOB)
    s3_bucket.put("data/a/.hidden", b"tmp")
    s3_bucket.put("data/folder/", b"")  # a console's folder marker: no key
    s3_bucket.put("other/y.bin", b"elsewhere")
    store = _store(s3_bucket)
    before = s3_bucket.counts()
    assert store.read("a/x.bin") == BLOB
    assert store.size("a/x.bin") == len(BLOB)
    assert store.exists("a/x.bin") and not store.exists("a/nope.bin")
    assert list(store.list_keys()) == ["a/x.bin"]
    with pytest.raises(HotsetError, match=r"no such key 'a/nope\.bin' in store 's3://hs-"):
        store.read("a/nope.bin")
    with pytest.raises(HotsetError, match="no such key"):
        store.size("a/nope.bin")
    assert store.stats().reads == 1 and store.stats().bytes_read == len(BLOB)
    served = s3_bucket.counts() - before
    # the read, and the two HEADs of exists and one of size (SeaweedFS counts a HEAD as a
    # GET); the failed read is a GET too; the listing is not
    assert served.requests == 1 + 3 + 1 + 1
    assert served.bytes == len(BLOB)


def test_s3_a_missing_bucket_or_a_bad_url_fails_at_open_naming_it(s3_bucket: S3Bucket) -> None:
    with pytest.raises(HotsetError, match=r"no bucket 'hs-no-such-bucket' at http://127\.0\.0\.1"):
        open_store("s3://hs-no-such-bucket/x")
    with pytest.raises(HotsetError, match="bad S3 bucket name 'A_B'"):
        open_store("s3://A_B/x")
    with pytest.raises(HotsetError, match=r"bad S3 prefix 'a/\.\./b'"):
        open_store(s3_bucket.url("a/../b"))
    made = open_store(f"s3://{s3_bucket.name}-new/p", create=True)
    made.write("k", b"v")
    assert made.read("k") == b"v"


def test_s3_ranged_read_is_one_get_per_coalesced_range_as_the_server_counts(
    s3_bucket: S3Bucket,
) -> None:
    s3_bucket.put("data/chunk.bin", BLOB)
    store = _store(s3_bucket)
    ranges = [(100, 10), (110, 5), (4000, 3), (0, 1), (9000, 100)]
    wanted = [BLOB[o : o + n] for o, n in ranges]
    assert store.range_requests(ranges) == 4  # (100, 10) and (110, 5) touch: one GET
    before = s3_bucket.counts()
    assert read_ranges(store, "chunk.bin", ranges) == wanted
    served = s3_bucket.counts() - before
    assert served.requests == 4 == store.stats().reads
    assert served.bytes == sum(n for _, n in ranges) == store.stats().bytes_read
    # behind retries the count is the same: range_requests sees through the wrapper
    assert range_requests(RetryingStore(store), ranges) == 4


def test_s3_a_range_past_the_end_returns_fewer_bytes_or_none(s3_bucket: S3Bucket) -> None:
    s3_bucket.put("data/small.bin", b"0123456789")
    store = _store(s3_bucket)
    assert store.read_ranges("small.bin", [(8, 10), (20, 5), (3, 0)]) == [b"89", b"", b""]
    assert store.stats().reads == 2  # the empty range asks nothing


def test_s3_read_many_gets_each_key_once_in_order(s3_bucket: S3Bucket) -> None:
    for i in range(6):
        s3_bucket.put(f"data/k{i}", bytes([i]) * (i + 1))
    store = _store(s3_bucket)
    keys = ["k3", "k0", "k5", "k3", "k1"]
    before = s3_bucket.counts()
    assert store.read_many(keys) == [bytes([int(k[1])]) * (int(k[1]) + 1) for k in keys]
    served = s3_bucket.counts() - before
    assert served.requests == 4 == store.stats().reads
    assert served.bytes == 4 + 1 + 6 + 2


def test_s3_write_is_one_put_and_delete_removes(s3_bucket: S3Bucket) -> None:
    store = _store(s3_bucket, "w")
    store.write("dir/obj", b"hello")
    assert s3_bucket.get("w/dir/obj") == b"hello"
    assert store.stats().writes == 1 and store.stats().bytes_written == 5
    store.delete("dir/obj")
    store.delete("dir/obj")  # already gone: S3 answers the same
    assert not store.exists("dir/obj")


@pytest.mark.parametrize("fault", ["503", "reset", "truncate"])
def test_s3_transient_faults_are_retried_and_counted(
    s3_bucket: S3Bucket, monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    s3_bucket.put("data/x.bin", BLOB)
    proxy = FaultProxy(s3_bucket.server.ports["s3.port"])
    try:
        monkeypatch.setenv("AWS_ENDPOINT_URL_S3", proxy.endpoint)
        store = RetryingStore(_store(s3_bucket), backoff_s=0.01, max_backoff_s=0.02)
        proxy.fail_next(2, fault)
        before = s3_bucket.counts()
        assert store.read_ranges("x.bin", [(10, 20), (5000, 7)]) == [BLOB[10:30], BLOB[5000:5007]]
        assert store.retries == 2 and store.failures == 0
        assert proxy.failed == 2
        served = s3_bucket.counts() - before
        # the failed attempts never reached the server (a truncated one did: its GET
        # is counted there, and retried whole); the last attempt's two GETs did
        assert served.requests == 2 + (2 if fault == "truncate" else 0)
    finally:
        proxy.close()


def test_s3_gives_up_with_a_storage_error_naming_the_key_and_no_secret(
    s3_bucket: S3Bucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    s3_bucket.put("data/x.bin", b"abc")
    proxy = FaultProxy(s3_bucket.server.ports["s3.port"])
    try:
        monkeypatch.setenv("AWS_ENDPOINT_URL_S3", proxy.endpoint)
        store = RetryingStore(_store(s3_bucket), retries=2, backoff_s=0.0, max_backoff_s=0.0)
        proxy.fail_next(10, "503")
        with pytest.raises(StorageError) as caught:
            store.read("x.bin")
    finally:
        proxy.close()
    text = str(caught.value)
    assert "gave up after 3 attempts" in text and "x.bin" in text and "SlowDown" in text
    _assert_no_secret(s3_bucket, text, repr(store))


def _assert_no_secret(bucket: S3Bucket, *texts: str) -> None:
    for text in texts:
        assert bucket.server.secret_key not in text
        assert bucket.server.access_key not in text


def test_s3_credentials_and_endpoint_from_a_config_file_profile(
    s3_bucket: S3Bucket, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    s3_bucket.put("data/x.bin", b"from a profile")
    server = s3_bucket.server
    config, credentials = tmp_path / "config", tmp_path / "credentials"
    config.write_text(
        f"[profile lab]\nregion = us-east-1\nendpoint_url = {server.endpoint}\n"
        "[default]\nregion = us-east-1\nendpoint_url = http://127.0.0.1:9\n"
    )
    credentials.write_text(
        f"[lab]\naws_access_key_id = {server.access_key}\n"
        f"aws_secret_access_key = {server.secret_key}\n"
    )
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.setenv("AWS_PROFILE", "lab")
    assert open_store(s3_bucket.url("data")).read("x.bin") == b"from a profile"
    monkeypatch.delenv("AWS_PROFILE")  # the option names the profile as well
    assert open_store(s3_bucket.url("data"), profile="lab").read("x.bin") == b"from a profile"
    with pytest.raises(HotsetError, match=r"no usable S3 credentials \(NoCredentialsError\)"):
        open_store(s3_bucket.url("data"))  # the default profile has none
    with credentials.open("a") as fh:
        fh.write("[default]\naws_access_key_id = A\naws_secret_access_key = B\n")
    with pytest.raises(HotsetError, match=r"at http://127\.0\.0\.1:9: EndpointConnectionError"):
        open_store(s3_bucket.url("data"))  # nor does anything answer at its endpoint


def test_s3_refused_credentials_are_named_never_printed(
    s3_bucket: S3Bucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    s3_bucket.put("data/x.bin", b"abc")
    store = _store(s3_bucket)
    pickled = pickle.dumps(store)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_bucket.server.secret_key[::-1])
    with pytest.raises(HotsetError) as at_open:
        open_store(s3_bucket.url("data"))
    wrong = pickle.loads(pickled)  # a worker resolves credentials from its environment
    with pytest.raises(StorageError) as at_read:
        wrong.read("x.bin")
    assert "refused the credentials" in str(at_read.value)
    assert "HTTP 403" in str(at_open.value)
    _assert_no_secret(s3_bucket, str(at_open.value), str(at_read.value), repr(store))
    secret = s3_bucket.server.secret_key
    assert secret.encode() not in pickled and secret[::-1].encode() not in pickle.dumps(wrong)
    assert s3_bucket.server.access_key.encode() not in pickled


def test_s3_store_read_in_a_child_process_makes_its_own_client(s3_bucket: S3Bucket) -> None:
    import multiprocessing

    s3_bucket.put("data/x.bin", BLOB)
    store = _store(s3_bucket)
    assert store.read("x.bin") == BLOB  # the parent's client exists before the fork
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        assert pool.apply(_read_in_child, (store,)) == (len(BLOB), os.getppid() != 0)


def _read_in_child(store: S3Store) -> tuple[int, bool]:
    return len(store.read("x.bin")), True


def test_s3_options_are_checked_with_a_suggestion(s3_bucket: S3Bucket) -> None:
    with pytest.raises(
        HotsetError, match=r"no option 'endpoint' \(did you mean 'endpoint_url'\?\)"
    ):
        open_store(s3_bucket.url(), endpoint="http://x")
    with pytest.raises(HotsetError, match="never from options"):
        open_store(s3_bucket.url(), aws_secret_access_key="x")
    with pytest.raises(HotsetError, match="max_connections: must be an integer > 0, got 0"):
        open_store(s3_bucket.url(), max_connections=0)


def test_s3_without_boto3_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)
    with pytest.raises(HotsetError, match=r"pip install hotset\[s3\]"):
        open_store("s3://some-bucket/data")


def test_s3_server_answers_a_multi_range_get_with_the_whole_object(s3_bucket: S3Bucket) -> None:
    """Why read_ranges sends one range per GET: a multi-range header buys nothing here."""
    s3_bucket.put("data/x.bin", BLOB)
    got = s3_bucket.server.client().get_object(
        Bucket=s3_bucket.name, Key="data/x.bin", Range="bytes=0-9,100-109"
    )
    assert got["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert got["Body"].read() == BLOB


class _IgnoresRange:
    """A client whose server ignores Range (answers 200 with the whole object)."""

    def __init__(self, data: bytes) -> None:
        self.data, self.calls = data, 0

    def get_object(self, **kwargs: object) -> dict[str, object]:
        import io

        from botocore.response import StreamingBody

        self.calls += 1
        body = StreamingBody(io.BytesIO(self.data), len(self.data))
        meta = {"HTTPStatusCode": 200}
        return {"Body": body, "ContentLength": len(self.data), "ResponseMetadata": meta}


def test_s3_a_server_ignoring_range_is_sliced_and_counted_as_sent(s3_bucket: S3Bucket) -> None:
    store = _store(s3_bucket)
    fake = _IgnoresRange(BLOB)
    store._client_obj = fake
    ranges = [(0, 10), (500, 5), (9000, 3)]
    assert store.read_ranges("x.bin", ranges) == [BLOB[o : o + n] for o, n in ranges]
    assert fake.calls == 1  # the first answer held every range: no more GETs
    assert store.stats().reads == 1 and store.stats().bytes_read == len(BLOB)
