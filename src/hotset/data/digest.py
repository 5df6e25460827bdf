"""Digest files: one BLAKE2b-256 content hash per sample, Quiver's capabilities (FAST'20 §4.3).

Why a second hash. The manifest's xxh3-64 checks integrity: fast, and enough to
notice a changed file. It is no capability: 64 non-cryptographic bits can be
forged, and the manifest is often public. A content-addressed cache shared by
several users must only serve bytes to a job that could have read them itself,
so it is addressed by a hash that can only be had *from the bytes*: BLAKE2b-256
(``hashlib.blake2b(data, digest_size=32)``). Holding a sample's BLAKE2b is the
proof of having had its content, which is the capability to look it up
(:mod:`hotset.cachestore.capability`); the digest is computed from data the
user can read (``hotset data digest DIR``), once, and kept beside the job.

File format (JSON, one object; ``DIR/digest.json`` by default)::

    {"format": "hotset-digest", "version": 1, "hash": "blake2b-256",
     "dataset": "<Manifest.identity() of the data set it was made from>",
     "count": N,            # samples: ids 0 .. N-1
     "units": C,            # chunk files of a packed data set: cache ids N .. N+C-1
     "blake2b": ["<64 hex>", ...],   # N + C entries, by cache id
     "xxh3": ["<16 hex>", ...]}      # the same ids' manifest / chunks.json hashes

Entries are by cache id, the ids the loader's cache uses: a sample's id, then
``N + c`` for chunk ``c`` (a packed data set's chunk is cached whole, so it needs
a capability of its own; its bytes are the chunk file's). The xxh3 column ties
each capability to the bytes the manifest names, so a digest is checked against
a data set without reading it (:meth:`Digest.check_matches`); the paper's
``file_location`` is the manifest's key of the same id. A malformed, truncated
or mismatched digest is a :class:`~hotset.errors.HotsetError` naming the file
and the problem.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hotset.data.manifest import Manifest, content_hash
from hotset.errors import HotsetError, IntegrityError
from hotset.fsutil import atomic_write
from hotset.storage.base import Store

__all__ = [
    "DIGEST_FORMAT",
    "DIGEST_JSON",
    "DIGEST_VERSION",
    "Digest",
    "capability_of",
    "compute_digest",
    "default_digest_path",
    "digest_for_job",
    "load_digest",
    "write_digest",
]

DIGEST_FORMAT = "hotset-digest"
DIGEST_VERSION = 1
DIGEST_HASH = "blake2b-256"
DIGEST_JSON = "digest.json"
#: bytes of one capability (BLAKE2b-256) and of one xxh3-64
CAP_BYTES = 32
XXH_BYTES = 8
_CAP_HEX = re.compile(r"^[0-9a-f]{64}$")
_XXH_HEX = re.compile(r"^[0-9a-f]{16}$")


def capability_of(data: bytes | bytearray | memoryview) -> str:
    """The capability of ``data``: 64 lowercase hex digits of its BLAKE2b-256."""
    return hashlib.blake2b(data, digest_size=CAP_BYTES).hexdigest()


@dataclass(frozen=True, eq=False)
class Digest:
    """Capabilities by cache id, held as packed bytes.

    Packed (``32`` and ``8`` bytes per id) because the digest travels to every
    DataLoader worker inside the cache handle: a million samples pickle to 40 MB
    this way, against several times that as a list of hex strings.
    """

    #: BLAKE2b-256 of every cache id, back to back
    caps: bytes
    #: xxh3-64 of every cache id, back to back (the manifest's / chunks.json's)
    xxh3s: bytes
    #: samples; ids ``count .. count + units - 1`` are chunks
    count: int
    units: int
    #: the manifest identity of the data set it was made from
    dataset: str
    #: where it was read from (error messages)
    source: str = "<digest>"

    def __post_init__(self) -> None:
        total = self.count + self.units
        if len(self.caps) != CAP_BYTES * total or len(self.xxh3s) != XXH_BYTES * total:
            raise HotsetError(f"digest {self.source}: {total} entries expected")

    def __len__(self) -> int:
        """Cache ids covered: samples and chunks."""
        return self.count + self.units

    def capability(self, cid: int) -> str:
        """Cache id ``cid``'s capability (64 hex)."""
        return self.caps[CAP_BYTES * cid : CAP_BYTES * (cid + 1)].hex()

    def xxh3(self, cid: int) -> str:
        return self.xxh3s[XXH_BYTES * cid : XXH_BYTES * (cid + 1)].hex()

    def capability_for(self, cid: int, xxh3: str) -> str | None:
        """``cid``'s capability when the digest holds it for bytes hashing to ``xxh3``.

        ``None`` otherwise (an id it does not cover, or other bytes than it was
        made from): a job gets no key for content it cannot show it had.
        """
        if not 0 <= cid < len(self) or len(xxh3) != 2 * XXH_BYTES:
            return None
        try:
            theirs = bytes.fromhex(xxh3)
        except ValueError:
            return None
        if self.xxh3s[XXH_BYTES * cid : XXH_BYTES * (cid + 1)] != theirs:
            return None
        return self.capability(cid)

    @classmethod
    def from_hex(
        cls,
        caps: Sequence[str],
        xxh3s: Sequence[str],
        *,
        count: int,
        dataset: str,
        source: str = "<digest>",
    ) -> Digest:
        """A digest from hex columns (checked: lowercase, right length)."""
        if len(caps) != len(xxh3s) or len(caps) < count:
            raise HotsetError(
                f"digest {source}: {len(caps)} blake2b and {len(xxh3s)} xxh3 entries "
                f"for {count} samples"
            )
        _first_bad(caps, _CAP_HEX, source, "blake2b", "64 lowercase hex digits")
        _first_bad(xxh3s, _XXH_HEX, source, "xxh3", "16 lowercase hex digits")
        return cls(
            caps=bytes.fromhex("".join(caps)),
            xxh3s=bytes.fromhex("".join(xxh3s)),
            count=count,
            units=len(caps) - count,
            dataset=dataset,
            source=source,
        )

    def check_matches(self, manifest: Manifest, *, unit_hashes: Sequence[str] = ()) -> None:
        """Raise unless this digest was made from ``manifest``'s bytes (no reads).

        Compares counts and each id's xxh3; ``unit_hashes`` (a packed data set's
        chunk hashes) are compared with the digest's units when both have some.
        """
        if self.count != len(manifest):
            raise HotsetError(
                f"digest {self.source} holds {self.count} samples but the data set has "
                f"{len(manifest)}: make it again with `hotset data digest`"
            )
        want = bytes.fromhex("".join(manifest.hashes))
        if want != self.xxh3s[: XXH_BYTES * self.count]:
            sid = _first_diff(want, self.xxh3s, XXH_BYTES)
            raise HotsetError(
                f"digest {self.source} was made from other bytes: sample {sid} "
                f"({manifest.keys[sid]!r}) has xxh3 {manifest.hashes[sid]} in the manifest, "
                f"{self.xxh3(sid)} in the digest; make it again with `hotset data digest`"
            )
        if (
            self.units
            and unit_hashes
            and list(unit_hashes) != [self.xxh3(self.count + c) for c in range(self.units)]
        ):
            raise HotsetError(
                f"digest {self.source} holds {self.units} chunk(s) that do not match the data "
                f"set's {len(unit_hashes)} (re-packed?): make it again with `hotset data digest`"
            )

    def to_json(self) -> str:
        n = len(self)
        doc = {
            "format": DIGEST_FORMAT,
            "version": DIGEST_VERSION,
            "hash": DIGEST_HASH,
            "dataset": self.dataset,
            "count": self.count,
            "units": self.units,
            "blake2b": [self.capability(i) for i in range(n)],
            "xxh3": [self.xxh3(i) for i in range(n)],
        }
        return json.dumps(doc, separators=(",", ":")) + "\n"


def _first_bad(
    values: Sequence[object], pattern: re.Pattern[str], source: str, column: str, what: str
) -> None:
    for i, value in enumerate(values):
        if not isinstance(value, str) or pattern.match(value) is None:
            raise HotsetError(f"digest {source}: {column} entry {i} is {value!r:.80}, not {what}")


def _first_diff(a: bytes, b: bytes, width: int) -> int:
    for i in range(0, len(a), width):
        if a[i : i + width] != b[i : i + width]:
            return i // width
    return len(a) // width


def load_digest(path: str | os.PathLike[str], *, expected_count: int | None = None) -> Digest:
    """Read a digest file; ``expected_count`` is the data set's size, checked too."""
    source = os.fspath(path)
    try:
        text = Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise HotsetError(f"cannot read digest {source}: {exc}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise HotsetError(f"digest {source} is not valid JSON (truncated?): {exc}") from None
    digest = _parse(doc, source)
    if expected_count is not None and digest.count != expected_count:
        raise HotsetError(
            f"digest {source} holds {digest.count} samples but the data set has "
            f"{expected_count}: make it again with `hotset data digest`"
        )
    return digest


def _parse(doc: Any, source: str) -> Digest:
    if not isinstance(doc, dict):
        raise HotsetError(f"digest {source}: expected a JSON object, got {type(doc).__name__}")
    if doc.get("format") != DIGEST_FORMAT:
        raise HotsetError(
            f"digest {source}: format is {doc.get('format')!r}, expected {DIGEST_FORMAT!r}"
        )
    if doc.get("version") != DIGEST_VERSION:
        raise HotsetError(
            f"digest {source}: version {doc.get('version')!r} is not supported "
            f"(this hotset reads version {DIGEST_VERSION})"
        )
    if doc.get("hash") != DIGEST_HASH:
        raise HotsetError(f"digest {source}: hash {doc.get('hash')!r}, expected {DIGEST_HASH!r}")
    counts = {}
    for name in ("count", "units"):
        value = doc.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise HotsetError(f"digest {source}: {name} must be an integer >= 0, got {value!r:.40}")
        counts[name] = value
    dataset = doc.get("dataset")
    if not isinstance(dataset, str):
        raise HotsetError(f"digest {source}: dataset must be a string, got {dataset!r:.40}")
    columns = {}
    total = counts["count"] + counts["units"]
    for name in ("blake2b", "xxh3"):
        value = doc.get(name)
        if not isinstance(value, list):
            raise HotsetError(f"digest {source}: {name} must be a list, got {value!r:.40}")
        if len(value) != total:
            raise HotsetError(
                f"digest {source}: {name} has {len(value)} entries but count + units is "
                f"{total} (truncated?)"
            )
        columns[name] = value
    return Digest.from_hex(
        columns["blake2b"], columns["xxh3"], count=counts["count"], dataset=dataset, source=source
    )


def write_digest(digest: Digest, path: str | os.PathLike[str]) -> Path:
    """Write ``digest`` atomically (a reader never sees half a file); return the path."""
    out = Path(path)
    atomic_write(out, digest.to_json(), durable=True)
    return out


def default_digest_path(location: str | os.PathLike[str]) -> Path:
    """``DIR/digest.json`` beside the manifest; a URL data set needs ``--out``."""
    text = os.fspath(location)
    if "://" in text and not text.startswith("file://"):
        raise HotsetError(f"data set {text!r} is not a local directory: give --out FILE")
    path = Path(text.removeprefix("file://"))
    return (path.parent if path.suffix == ".csv" else path) / DIGEST_JSON


def compute_digest(
    manifest: Manifest,
    store: Store,
    *,
    unit_keys: Sequence[str] = (),
    unit_hashes: Sequence[str] = (),
    progress: bool = False,
    workers: int = 4,
) -> Digest:
    """Read every sample (then every chunk file) once and hash it with BLAKE2b-256.

    Each read is checked against its xxh3 first: a digest of a file that changed
    since the manifest was made would hand out capabilities for the wrong bytes,
    so that is an :class:`IntegrityError` naming the key (run ``hotset data verify``).
    """
    from tqdm import tqdm

    keys = [*manifest.keys, *unit_keys]
    hashes = [*manifest.hashes, *unit_hashes]
    if len(unit_keys) != len(unit_hashes):
        raise HotsetError("compute_digest: unit_keys and unit_hashes differ in length")

    def one(i: int) -> tuple[str, str]:
        data = store.read(keys[i])
        actual = content_hash(data)
        if actual != hashes[i]:
            what = f"sample {i}" if i < len(manifest) else f"chunk {i - len(manifest)}"
            raise IntegrityError(
                f"{what} ({keys[i]!r}) hashes to {actual} but its manifest says {hashes[i]}: "
                "run `hotset data verify` before making a digest"
            )
        return capability_of(data), actual

    caps: list[str] = []
    xxh3s: list[str] = []
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        results: Iterator[tuple[str, str]] = pool.map(one, range(len(keys)))
        bar: Callable[..., Iterator[tuple[str, str]]] = tqdm
        for cap, xxh in bar(
            results,
            total=len(keys),
            desc="digest",
            unit="file",
            file=sys.stderr,
            disable=not progress,
        ):
            caps.append(cap)
            xxh3s.append(xxh)
    return Digest.from_hex(
        caps, xxh3s, count=len(manifest), dataset=manifest.identity(), source="<computed>"
    )


def digest_for_job(
    value: object, manifest: Manifest, *, unit_hashes: Sequence[str], reads_units: bool
) -> Digest:
    """The loader's ``digest=`` option checked against its data set, before any cache I/O.

    ``value`` is a digest file's path or a :class:`Digest`; ``unit_hashes`` are the
    data set's chunk hashes (none if unpacked) and ``reads_units`` says whether the
    job caches whole chunks, whose capabilities the digest must then hold.
    """
    if isinstance(value, Digest):
        found = value
    elif isinstance(value, str | os.PathLike):
        found = load_digest(value, expected_count=len(manifest))
    else:
        raise HotsetError(
            f"digest must be a digest file's path (hotset data digest) or a Digest, "
            f"got {value!r:.80}"
        )
    found.check_matches(manifest, unit_hashes=unit_hashes)
    if reads_units and found.units != len(unit_hashes):
        raise HotsetError(
            f"digest {found.source} holds {found.units} chunk capabilities but the job reads "
            f"whole chunks of a data set packed into {len(unit_hashes)}: make the digest "
            "again after `hotset data pack`"
        )
    return found
