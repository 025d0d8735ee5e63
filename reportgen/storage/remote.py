"""Run logs and built sites in S3 or an S3-compatible store, through fsspec's s3fs.

Credentials, region and endpoint come from the standard AWS chain that botocore reads
(environment variables, ~/.aws/config and credentials, SSO, instance and pod roles);
``AWS_ENDPOINT_URL_S3`` (or ``AWS_ENDPOINT_URL``) points it at an S3-compatible server.

A location is a *folder* in the bucket: ``s3://bucket/runs`` means every key under
``runs/``, never ``runs2/``. Listing returns each object's ETag and size, so callers decide
what changed without reading it; an object is read only when it is opened, into memory:
nothing is written to local disk.

Requests: a read never asks for an object's metadata first (no HEAD): the listing already gave
its size, so a small object is one GET and a large one is read in ranged GETs of known extent.
``Store.fetch`` reads many objects at once, at most ``FETCH_WORKERS`` requests in flight.
"""

from __future__ import annotations

import builtins
import hashlib
import io
import json
import mimetypes
import os
import posixpath
import re
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from reportgen.storage import is_remote

ANNOTATIONS_NAME = "annotations.toml"
# One PUT takes up to 5 GiB; a single-part upload keeps the ETag equal to the MD5 of the bytes,
# which is what makes the next publish able to skip unchanged files.
_SINGLE_PUT_CHUNK = 2560 * 2**20
_READ_BLOCK = 4 * 2**20
# Objects up to this size are read whole with one GET; larger ones are streamed in blocks.
WHOLE_GET_BYTES = 16 * 2**20
# At most this many GETs in flight when many objects are read at once (Store.fetch): enough to
# hide a region's 20-60 ms round trip, few enough for a laptop's connection and file handles.
FETCH_WORKERS = 8
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".md": "text/markdown; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".json": "application/json",
    ".jsonl": "application/x-ndjson",
    ".csv": "text/csv; charset=utf-8",
    ".svg": "image/svg+xml",
    ".toml": "application/toml",
    ".txt": "text/plain; charset=utf-8",
    ".pt": "application/octet-stream",
    ".parquet": "application/vnd.apache.parquet",
}


class RemoteError(OSError):
    """An object-store location cannot be used; the message says which and why."""


def content_type(name: str) -> str:
    """The Content-Type an object is stored with, by its name's last ending; a name whose type
    mimetypes would read through an encoding ending ('x.html.gz' as a page) is stored as bytes."""
    suffix = posixpath.splitext(name)[1].lower()
    guessed, encoding = mimetypes.guess_type(name)
    return CONTENT_TYPES.get(suffix) or (None if encoding else guessed) or "application/octet-stream"


_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")


def bucket_problem(url: str) -> str | None:
    """Why an s3:// location to write to has no valid bucket name (3 to 63 lower-case letters,
    digits, dots and hyphens, starting and ending with a letter or digit, no '..'), or None.
    Checked before any connection: the store's own answer to such a name is a credentials or
    endpoint error that does not name it. (Reading accepts any name a listing gives.)"""
    bucket = url[len("s3://") :].split("/", 1)[0]
    if _BUCKET.fullmatch(bucket) and ".." not in bucket:
        return None
    # Both as Python writes them (quoted, an escape as \x1b): text from the command line.
    return f"{url[:200]!r}: {bucket[:100]!r} is no valid bucket name (3 to 63 lower-case letters, digits, '.' and '-')"


# The S3 client (s3fs) reads what follows this in a path as an object version and drops it from
# the key: "pub/index.html?versionId=x" would read or overwrite "pub/index.html".
VERSION_MARK = "?versionId="


def split_url(url: str) -> tuple[str, str]:
    """('bucket', 'key/prefix') of an s3:// URL, the prefix without its trailing slash. A prefix
    with an empty part ('s3://bucket//runs', 'a//b'), a '.' or '..' part, or VERSION_MARK is
    refused: the client would store its objects under another key than the one named."""
    if not is_remote(url):
        raise RemoteError(f"{url}: not an s3:// location")
    bucket, _, key = url[len("s3://") :].partition("/")
    key = key.removesuffix("/")
    if not bucket or VERSION_MARK in url or any(part in ("", ".", "..") for part in key.split("/") if key):
        raise RemoteError(
            f"{url}: expected s3://bucket/prefix with no empty, '.' or '..' parts and no {VERSION_MARK!r}"
        )
    return bucket, key


def addressable(url: str) -> None:
    """RemoteError for an object URL the client would take for another object (VERSION_MARK)."""
    if VERSION_MARK in url:
        raise RemoteError(
            f"{url}: a key holding {VERSION_MARK!r} is not read or written: the S3 client takes what follows for a version of another key"
        )


CONNECT_TIMEOUT_S = 5
READ_TIMEOUT_S = 10
MAX_ATTEMPTS = 3


class Store:
    """One connection to the object store for one command; counts what it reads and writes."""

    def __init__(self) -> None:
        try:
            import s3fs
        except ImportError:
            raise RemoteError(
                "reading or writing s3:// needs s3fs: pip install '.[s3]' in the checkout (or pip install s3fs)"
            ) from None
        # No s3fs listing cache and no shared instance: every command sees the bucket as it is now
        # (one listing of a prefix per command: self._listings). An endpoint that takes the
        # connection and never answers is given up on within about half a minute: a read waits
        # READ_TIMEOUT_S for the next bytes, botocore tries each request MAX_ATTEMPTS times
        # (unless AWS_MAX_ATTEMPTS says otherwise) and s3fs does not retry it again on top (its
        # five retries of botocore's five attempts of 15 s each waited for many minutes).
        config: dict[str, Any] = {"connect_timeout": CONNECT_TIMEOUT_S, "read_timeout": READ_TIMEOUT_S}
        if not os.environ.get("AWS_MAX_ATTEMPTS"):
            config["retries"] = {"max_attempts": MAX_ATTEMPTS, "mode": "standard"}
        self.fs = s3fs.S3FileSystem(use_listings_cache=False, skip_instance_cache=True, config_kwargs=config)
        self.fs.retries = 1
        self.fetched: list[str] = []
        self.uploaded: list[str] = []
        # Bytes read ahead by fetch(), each taken (and forgotten) by the next open or read of its URL.
        self._held: dict[str, bytes | RemoteError] = {}
        self._listings: dict[str, dict[str, dict[str, Any]]] = {}
        self.warnings: list[str] = []  # inputs not used as they were (a manifest that did not check out)

    def _call(self, what: str, url: str, func: Any, *args: Any, **kwargs: Any) -> Any:
        addressable(url)
        try:
            return func(*args, **kwargs)
        except FileNotFoundError as exc:
            raise RemoteError(f"{url}: cannot {what}: not found ({exc})") from None
        except Exception as exc:  # botocore, aiohttp and s3fs raise many kinds; one message for all
            raise RemoteError(f"{url}: cannot {what}: {type(exc).__name__}: {exc}") from None

    def list(self, url: str) -> dict[str, dict[str, Any]]:
        """Every object under the folder URL: {s3 url: {'etag', 'size'}} (empty when none;
        a bucket that does not exist is an error). One LIST request per 1,000 keys and nothing
        else; a folder inside one this store already listed is answered from that listing
        (one command sees one listing of a prefix)."""
        bucket, key = split_url(url)
        folder = f"{bucket}/{key}/" if key else f"{bucket}/"
        for listed, objects in self._listings.items():
            if folder.startswith(listed):
                return {u: dict(info) for u, info in objects.items() if u.startswith(f"s3://{folder}")}
        from fsspec.asyn import sync

        contents = self._call("list", url, sync, self.fs.loop, self._list_pages, bucket, folder.partition("/")[2])
        objects = {}
        for item in contents:
            name = f"{bucket}/{item['Key']}"
            if not name.startswith(folder) or name.endswith("/"):
                continue  # a zero-byte "folder" marker some tools create
            objects[f"s3://{name}"] = {"etag": str(item.get("ETag", "")).strip('"'), "size": int(item.get("Size") or 0)}
        self._listings[folder] = objects
        return {u: dict(info) for u, info in objects.items()}

    def children(self, url: str) -> tuple[builtins.list[str], dict[str, dict[str, Any]]]:
        """The folder's immediate sub-folder names and the objects directly in it (a LIST with a
        delimiter: one request per 1,000 entries, whatever lies deeper)."""
        bucket, key = split_url(url)
        prefix = f"{key}/" if key else ""
        from fsspec.asyn import sync

        contents = self._call("list", url, sync, self.fs.loop, self._list_pages, bucket, prefix, "/")
        folders = sorted({item["Prefix"][len(prefix) :].rstrip("/") for item in contents if "Prefix" in item} - {""})
        objects = {
            f"s3://{bucket}/{item['Key']}": {
                "etag": str(item.get("ETag", "")).strip('"'),
                "size": int(item.get("Size") or 0),
            }
            for item in contents
            if "Key" in item and not item["Key"].endswith("/")
        }
        return folders, objects

    async def _list_pages(self, bucket: str, prefix: str, delimiter: str = "") -> builtins.list[dict[str, Any]]:
        found: builtins.list[dict[str, Any]] = []
        more: dict[str, str] = {"Delimiter": delimiter} if delimiter else {}
        while True:
            page = await self.fs._call_s3("list_objects_v2", Bucket=bucket, Prefix=prefix, **more)
            found += page.get("Contents", []) + page.get("CommonPrefixes", [])
            if not page.get("IsTruncated") or not page.get("NextContinuationToken"):
                return found
            more = {**more, "ContinuationToken": page["NextContinuationToken"]}

    def open(self, url: str, size: int | None = None) -> BinaryIO:
        """A binary stream of the object, kept in memory. With ``size`` (as listed) nothing asks
        the store for it first: an object up to WHOLE_GET_BYTES is one GET, a larger one is read
        in blocks as the reader goes."""
        held = self._take(url)
        if held is not None:
            return io.BytesIO(held)
        if size is not None and size <= WHOLE_GET_BYTES:
            return io.BytesIO(self._get(url, size))
        self.fetched.append(url)
        raw = self._call(
            "read",
            url,
            self.fs.open,
            url.removeprefix("s3://"),
            "rb",
            block_size=_READ_BLOCK,
            cache_type="readahead",
            size=size,
        )
        return io.BufferedReader(raw, buffer_size=_READ_BLOCK)

    def read(self, url: str, size: int | None = None) -> bytes:
        """The object's bytes; with ``size`` (as listed) never more than that many."""
        held = self._take(url)
        return held if held is not None else self._get(url, size)

    def _get(self, url: str, size: int | None = None) -> bytes:
        self.fetched.append(url)
        if size is None:
            # max_concurrency=1: otherwise s3fs asks for the size first (a HEAD) to split large objects.
            return self._call("read", url, self.fs.cat_file, url.removeprefix("s3://"), max_concurrency=1)
        # The size a listing or a manifest gave bounds the read: one ranged GET of at most one
        # byte more, so an object that is larger than it was listed (a manifest that does not
        # match it) is refused, not downloaded whole.
        data: bytes = (
            self._call("read", url, self.fs.cat_file, url.removeprefix("s3://"), start=0, end=size + 1) if size else b""
        )
        if len(data) != size:
            raise RemoteError(
                f"{url}: holds {'more' if len(data) > size else 'fewer'} than the {size} bytes listed for it "
                "(changed since it was listed, or a manifest that does not match it)"
            )
        return data

    def read_end(self, url: str, size: int, count: int) -> bytes:
        """The last ``count`` bytes (at most) of an object listed with ``size`` bytes, in one
        GET of a suffix range: the object's end as it is when read, also when it was replaced
        by a longer or shorter one since the listing (a range from the listed size read the
        middle of a longer one, and a shorter one failed). (Not counted in ``fetched``, which
        lists the run inputs read.)"""
        if not size:
            return b""
        data: bytes = self._call("read", url, self.fs.cat_file, url.removeprefix("s3://"), start=-count)
        return data

    def read_at_most(self, url: str, limit: int) -> bytes | None:
        """The object's bytes in one ranged GET (no HEAD), None when there is no such object;
        RemoteError when it holds more than limit bytes or cannot be read. (Not counted in
        ``fetched``, which lists the run inputs read.)"""
        data = self.read_start(url, limit + 1)
        if data is None:
            return None
        if len(data) > limit:
            raise RemoteError(f"{url}: larger than the limit of {limit} bytes")
        return data

    def read_start(self, url: str, count: int) -> bytes | None:
        """The first ``count`` bytes (at most) of the object in one ranged GET, None when there
        is no such object. (Not counted in ``fetched``.)"""
        addressable(url)
        try:
            data: bytes = self.fs.cat_file(url.removeprefix("s3://"), start=0, end=count)
        except FileNotFoundError:
            return None
        except Exception as exc:  # noqa: BLE001 - as in _call: one message for every kind
            raise RemoteError(f"{url}: cannot read: {type(exc).__name__}: {exc}") from None
        return data

    def read_range(self, url: str, start: int, count: int) -> bytes:
        """``count`` bytes (at most) from ``start`` of the object, in one ranged GET. (Not
        counted in ``fetched``.)"""
        data: bytes = self._call(
            "read", url, self.fs.cat_file, url.removeprefix("s3://"), start=start, end=start + count
        )
        return data

    def _take(self, url: str) -> bytes | None:
        held = self._held.pop(url, None)
        if isinstance(held, RemoteError):
            raise held
        return held

    def fetch(self, objects: Iterable[tuple[str, int]]) -> None:
        """Read these objects (URL and listed size) now, at most FETCH_WORKERS at a time, and
        hold their bytes for the next open or read of each (an error is held too, and raised
        there). Callers pass only objects small enough to hold together (a batch of logs within
        WHOLE_GET_BYTES each)."""
        sizes = dict(objects)
        todo = [url for url in sizes if url not in self._held]

        def one(url: str) -> tuple[str, bytes | RemoteError]:
            try:
                return url, self._get(url, sizes[url])
            except RemoteError as exc:
                return url, exc

        if len(todo) == 1:
            self._held.update([one(todo[0])])
        elif todo:
            with ThreadPoolExecutor(min(FETCH_WORKERS, len(todo)), thread_name_prefix="s3-fetch") as pool:
                self._held.update(pool.map(one, todo))

    def forget(self) -> None:
        """Drop whatever fetch() read and nobody took."""
        self._held.clear()

    def put(self, url: str, data: bytes) -> None:
        self._call(
            "upload",
            url,
            self.fs.pipe_file,
            url.removeprefix("s3://"),
            data,
            chunksize=_SINGLE_PUT_CHUNK,
            ContentType=content_type(url),
        )
        self.uploaded.append(url)

    def delete(self, url: str) -> None:
        self._call("delete", url, self.fs.rm_file, url.removeprefix("s3://"))


@dataclass(frozen=True)
class RemoteObject:
    """One object as listed: read only when asked to."""

    url: str
    etag: str
    size: int
    store: Store = field(compare=False, repr=False)

    def __str__(self) -> str:
        return self.url

    @property
    def name(self) -> str:
        return posixpath.basename(self.url)

    def open_stream(self) -> BinaryIO:
        return self.store.open(self.url, self.size)

    def read_bytes(self) -> bytes:
        return self.store.read(self.url, self.size)

    def read_text(self, encoding: str = "utf-8") -> str:
        return self.read_bytes().decode(encoding)


@dataclass(frozen=True)
class RemoteLog(RemoteObject):
    """A run log in the store, with the annotations.toml that sits beside it (if any)."""

    annotations: RemoteObject | None = None

    @property
    def change_key(self) -> str:
        """Changes whenever the log or its annotations change, known from the listing alone."""
        parts = [self.url, self.etag, str(self.size)]
        if self.annotations is not None:
            parts += [self.annotations.etag, str(self.annotations.size)]
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def list_logs(location: str, store: Store) -> list[RemoteLog]:
    """Logs at a location, by the same rule as local folders.

    A URL ending in ``.jsonl`` is that log; a run folder holding ``events.jsonl`` is that log;
    any other folder is searched for ``*.jsonl`` logs at any depth.
    """
    bucket, key = split_url(location)
    if key.endswith(".jsonl"):
        parent = posixpath.dirname(key)
        objects = store.list(f"s3://{bucket}/{parent}")
        url = f"s3://{bucket}/{key}"
        if url not in objects:
            raise RemoteError(f"{location}: cannot read: not found")
        return [_log(url, objects, store)]
    objects = _objects(location, store)
    base = f"s3://{bucket}/{key}/" if key else f"s3://{bucket}/"
    if base + "events.jsonl" in objects:
        return [_log(base + "events.jsonl", objects, store)]
    logs = []
    for url in sorted(objects):
        if not url.endswith(".jsonl"):
            continue
        if any(part in ("", ".", "..") for part in url[len("s3://") :].partition("/")[2].split("/")):
            # A key the listing gave with a '.' or '..' part: a store that normalises paths would
            # serve another object under it. Not read, as such a URL given by hand is refused.
            from collector.visible import visible

            store.warnings.append(f"warning: {visible(url, keep='')}: a key with an empty, '.' or '..' part; not read")
            continue
        logs.append(_log(url, objects, store))
    return logs


# --- per-prefix manifests ----------------------------------------------------------------------
# A campaign writes runs under dated prefixes (runs/2026-11-30/<run>/...). Once a prefix is
# closed, `reportgen manifest` lists it once and writes runs/_manifests/2026-11-30.json: every
# object under it with its ETag and size. A build then lists runs/_manifests/ and runs/ with a
# delimiter (the folders, not their contents), reads each closed folder's manifest (one small
# GET each, in parallel) and lists only the folders without one. A manifest is untrusted input:
# one that does not check out is a warning, and that folder is listed instead.

MANIFESTS_DIR = "_manifests"
MANIFEST_FORMAT = 1
MAX_MANIFEST_BYTES = 64 << 20


def _inside(name: str) -> bool:
    """A manifest's key, relative to its folder, names an object inside it that the client reads
    by that key: a plain key (``_plain_key``: text, no control character, no VERSION_MARK) of at
    most 1,024 characters (S3's limit), no part empty, '.' or '..'. Any other character is a
    key's, as the listing gave it."""
    return 0 < len(name) <= 1024 and _plain_key(name) and all(part not in ("", ".", "..") for part in name.split("/"))


_ETAG = re.compile(r"[0-9A-Za-z-]{1,80}")


def _objects(location: str, store: Store) -> dict[str, dict[str, Any]]:
    """Every object under location, as Store.list gives them, closed folders from their manifests."""
    split_url(location)  # a usable location, or RemoteError
    base = f"{location.rstrip('/')}/"
    manifests = {
        url[len(base) + len(MANIFESTS_DIR) + 1 : -len(".json")]: url
        for url in store.list(base + MANIFESTS_DIR)
        if url.endswith(".json") and "/" not in url[len(base) + len(MANIFESTS_DIR) + 1 :]
    }
    if not manifests:
        return store.list(location)
    folders, objects = store.children(location)
    closed = [name for name in folders if name in manifests]
    read: dict[str, bytes | RemoteError | None] = {}

    def one(name: str) -> None:
        try:
            read[name] = store.read_at_most(manifests[name], MAX_MANIFEST_BYTES)
        except RemoteError as exc:
            read[name] = exc

    with ThreadPoolExecutor(min(FETCH_WORKERS, max(1, len(closed))), thread_name_prefix="s3-manifest") as pool:
        list(pool.map(one, closed))
    for name in folders:
        if name == MANIFESTS_DIR:
            continue
        if VERSION_MARK in name:  # no object under it can be read by its key (addressable)
            store.warnings.append(f"warning: {base}{name}/ left out: {VERSION_MARK!r} in a folder's name")
            continue
        listed = None
        if name in read:
            try:
                listed = manifest_objects(read[name], f"{base}{name}/")
            except (RemoteError, ValueError, RecursionError) as exc:
                store.warnings.append(
                    f"warning: {manifests[name]} not used ({' '.join(str(exc).split())[:300]}); listing {base}{name}/ instead"
                )
        objects.update(listed if listed is not None else store.list(f"{base}{name}"))
    return objects


def manifest_objects(data: bytes | RemoteError | None, folder: str) -> dict[str, dict[str, Any]]:
    """The objects a manifest lists under folder (an s3:// URL ending in '/'); ValueError when
    it does not check out (every key a plain relative path inside folder)."""
    if isinstance(data, RemoteError):
        raise data
    if data is None:
        raise ValueError("gone since it was listed")
    raw = json.loads(data.decode("utf-8"))
    if type(raw) is not dict or raw.get("format") != MANIFEST_FORMAT or type(raw.get("objects")) is not dict:
        raise ValueError(f"not a manifest of format {MANIFEST_FORMAT} with an objects table")
    objects = {}
    for name, info in raw["objects"].items():
        if not _inside(name):
            raise ValueError(f"objects: {name[:80]!r} is not a plain path inside the folder")
        if (
            type(info) is not dict
            or type(info.get("size")) is not int
            or not 0 <= info["size"] < 1 << 50
            or type(info.get("etag")) is not str
            or not _ETAG.fullmatch(info["etag"])
        ):
            raise ValueError(f"objects.{name}: expected an etag and a size")
        objects[folder + name] = {"etag": info["etag"], "size": info["size"]}
    return objects


def write_manifest(folder: str, store: Store) -> tuple[str, int]:
    """List folder (s3://bucket/prefix/day) once and write its manifest beside it, in the
    parent's _manifests/; returns the manifest's URL and how many objects it lists."""
    bucket, key = split_url(folder)
    if not key:
        raise RemoteError(
            f"{folder}: a manifest is for a folder under a prefix (s3://bucket/runs/2026-11-30), not a bucket"
        )
    parent, _, name = key.rpartition("/")
    if MANIFESTS_DIR in key.split("/"):
        raise RemoteError(f"{folder}: a folder of manifests; a manifest closes a folder of delivered runs")
    base = f"s3://{bucket}/{key}/"
    listed = store.list(folder)
    if not listed:
        # A closed folder is read from its manifest alone: closing an empty one (a typo, or
        # before its runs arrived) would hide every run delivered there later.
        raise RemoteError(
            f"{folder}: holds no object; a manifest closes a folder of delivered runs (is the name right, have its runs arrived?)"
        )
    objects = {url[len(base) :]: {"etag": info["etag"], "size": info["size"]} for url, info in sorted(listed.items())}
    url = f"s3://{bucket}/{parent + '/' if parent else ''}{MANIFESTS_DIR}/{name}.json"
    store.put(
        url,
        json.dumps({"format": MANIFEST_FORMAT, "folder": key, "objects": objects}, sort_keys=True, indent=0).encode(),
    )
    return url, len(objects)


def _log(url: str, objects: dict[str, dict[str, Any]], store: Store) -> RemoteLog:
    info = objects[url]
    notes_url = posixpath.join(posixpath.dirname(url), ANNOTATIONS_NAME)
    notes = objects.get(notes_url)
    annotations = RemoteObject(notes_url, notes["etag"], notes["size"], store) if notes else None
    return RemoteLog(url, info["etag"], info["size"], store, annotations)


@dataclass
class PublishResult:
    uploaded: list[str] = field(default_factory=list)
    unchanged: int = 0
    deleted: list[str] = field(default_factory=list)
    # Stale objects --delete could not remove: their key holds VERSION_MARK, which the client
    # would take for a version of another key (that key would be deleted instead).
    undeletable: list[str] = field(default_factory=list)


def _local_files(folder: Path) -> list[tuple[str, Path]]:
    """Regular files under folder, as (relative posix path, path); no links, no hidden names."""
    files = []
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if any(part.startswith(".") for part in relative.parts):
            continue
        if path.is_symlink() or not path.is_file():
            continue
        files.append((relative.as_posix(), path))
    return files


def _plain_key(relative: str) -> bool:
    """A relative path that is UTF-8 text (not bytes the file system decoded as surrogates)
    with no control character: an object key every reader lists and prints as one line; and no
    VERSION_MARK, which the client would upload as another key."""
    try:
        relative.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return VERSION_MARK not in relative and not any(ord(c) < 32 or 127 <= ord(c) < 160 for c in relative)


def publish(
    folder: Path,
    location: str,
    store: Store,
    delete: bool = False,
    last: str | None = None,
    keep: list[str] | None = None,
) -> PublishResult:
    """Upload the files of folder under location, only those whose bytes differ from the stored ones.

    An object whose ETag is the MD5 of the local bytes (a single-part upload, which is how this
    writes them) and whose size matches is left alone. events.jsonl goes last, so a reader that
    lists the prefix meanwhile never finds a log whose artifacts are still missing. ``last``:
    a hidden file of folder uploaded after every other (the site's state, which vouches for
    the pages before it). With ``delete``, objects under location that the folder no longer
    has are removed, except ``last`` and those under the ``keep`` folders (relative, ending
    in '/': pages that are published but were not rebuilt into folder).
    """
    bucket, key = split_url(location)
    base = f"s3://{bucket}/{key}/" if key else f"s3://{bucket}/"
    remote = store.list(location)
    files = sorted(_local_files(folder), key=lambda item: (item[0].endswith("events.jsonl"), item[0]))
    if last is not None and (folder / last).is_file() and not (folder / last).is_symlink():
        files.append((last, folder / last))
    for relative, path in files:  # every key is checked before anything is uploaded
        if not _plain_key(relative):
            from collector.visible import visible

            raise RemoteError(
                f"{visible(str(path), keep='')}: a file name that is not UTF-8 text, or holds a control character or {VERSION_MARK!r}, cannot be an object key; rename it (nothing was uploaded)"
            )
    result = PublishResult()
    for relative, path in files:
        url = base + relative
        data = path.read_bytes()
        stored = remote.get(url)
        if (
            stored
            and stored["size"] == len(data)
            and stored["etag"] == hashlib.md5(data, usedforsecurity=False).hexdigest()
        ):
            result.unchanged += 1
            continue
        store.put(url, data)
        result.uploaded.append(url)
    if delete:
        kept = {base + relative for relative, _ in files} | ({base + last} if last else set())
        folders = tuple(base + prefix for prefix in keep or [])
        for url in sorted(set(remote) - kept):
            if folders and url.startswith(folders):
                continue
            if VERSION_MARK in url:
                result.undeletable.append(url)
                continue
            store.delete(url)
            result.deleted.append(url)
    return result
