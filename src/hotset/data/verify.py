"""Prove that a store still holds the bytes its manifest promises.

Caches and importance tables are keyed by sample id; a silently changed file
would make every cached copy and every measured loss refer to the wrong data.
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from hotset.data.manifest import Manifest, content_hash
from hotset.errors import HotsetError
from hotset.storage.base import Store


@dataclass(frozen=True)
class Mismatch:
    """A sample whose bytes differ from the manifest."""

    id: int
    key: str
    expected: str
    actual: str
    expected_size: int
    actual_size: int


@dataclass
class VerifyResult:
    """What :func:`verify` found; ``ok`` when every sample is present and matches."""

    checked: int = 0
    bytes: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches and not self.missing

    def summary(self) -> str:
        if self.ok:
            return f"verified {self.checked} samples, {self.bytes} bytes"
        return (
            f"FAILED: {len(self.mismatches)} mismatched and {len(self.missing)} missing "
            f"of {self.checked} samples"
        )


def verify(
    manifest: Manifest, store: Store, *, progress: bool = False, workers: int = 4
) -> VerifyResult:
    """Re-read and re-hash every sample; ``bytes`` counts the bytes actually read."""
    from tqdm import tqdm

    def check(i: int) -> tuple[int, bytes | None]:
        key = manifest.keys[i]
        if not store.exists(key):
            return i, None
        try:
            return i, store.read(key)
        except HotsetError:  # vanished between exists() and read()
            return i, None

    result = VerifyResult()
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for i, data in tqdm(
            pool.map(check, range(len(manifest))),
            total=len(manifest),
            desc="verify",
            unit="file",
            file=sys.stderr,
            disable=not progress,
        ):
            result.checked += 1
            key = manifest.keys[i]
            if data is None:
                result.missing.append(key)
                continue
            result.bytes += len(data)
            actual = content_hash(data)
            if actual != manifest.hashes[i] or len(data) != int(manifest.sizes[i]):
                result.mismatches.append(
                    Mismatch(i, key, manifest.hashes[i], actual, int(manifest.sizes[i]), len(data))
                )
    return result
