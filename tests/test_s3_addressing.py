"""Every object this tool reads or writes in S3 is the one it names.

The S3 client (s3fs) reads "?versionId=" in a path as an object version and drops it from the
key, and keeps a leading '/' of a key. Before: a published folder holding
"index.html?versionId=x" overwrote index.html while the output said it uploaded the other key;
`publish DIR s3://b/p?versionId=1` wrote one object "p"; `manifest 's3://b/runs/d?versionId=1'`
wrote "runs/_manifests/d"; a campaign destination "s3://camp/ver?versionId=1" was accepted and
its tasks all overwrote one object "ver"; a destination "s3://camp//nightly" was accepted though
docs/campaigns.md refused empty parts, and its ledger was then found nowhere. No server is
started: each refusal comes before any request.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from campaign.spec import CampaignError, load_campaign
from reportgen.storage.remote import RemoteError, Store, publish, split_url
from tests.test_campaign_review_fixes import write_campaign


@pytest.mark.parametrize(
    "url",
    [
        "s3://bucket//runs",
        "s3://bucket/runs//nightly",
        "s3://bucket///",
        "s3://bucket/runs?versionId=1",
        "s3://bucket/runs/d?versionId=1",
    ],
)
def test_a_prefix_the_client_would_store_elsewhere_is_refused(url: str) -> None:
    with pytest.raises(RemoteError, match="no empty, '.' or '..' parts and no '[?]versionId='"):
        split_url(url)


@pytest.mark.parametrize(
    ("url", "split"),
    [
        ("s3://bucket", ("bucket", "")),
        ("s3://bucket/", ("bucket", "")),
        ("s3://bucket//", ("bucket", "")),  # the bucket root, as before
        ("s3://bucket/runs/", ("bucket", "runs")),
        ("s3://bucket/runs/nightly", ("bucket", "runs/nightly")),
        # A '?' of another kind is a character of the key, to the client too: a folder named
        # "day?2" that publish wrote is read back (a second review found it refused).
        ("s3://bucket/runs/day?2", ("bucket", "runs/day?2")),
    ],
)
def test_a_plain_prefix_still_splits(url: str, split: tuple[str, str]) -> None:
    assert split_url(url) == split


def test_an_object_whose_key_holds_a_version_mark_is_never_sent_to_the_client() -> None:
    """A listing may hold such a key (runs/evil?versionId=abc/events.jsonl): reading it would
    read runs/evil. The store refuses it by name before any request."""
    store = Store()
    called: list[object] = []
    with pytest.raises(RemoteError, match=r"runs/evil\?versionId=abc/events.jsonl: a key holding"):
        store._call("read", "s3://b/runs/evil?versionId=abc/events.jsonl", lambda *a: called.append(a))
    with pytest.raises(RemoteError, match="a key holding"):
        store.read_start("s3://b/runs/evil?versionId=abc/events.jsonl", 10)
    assert called == []


def test_publish_refuses_a_file_named_with_a_version_mark_before_uploading_anything(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("the real page", encoding="utf-8")
    (site / "index.html?versionId=x").write_text("an injected page", encoding="utf-8")

    class NoStore:
        def list(self, url: str) -> dict[str, object]:
            return {}

        def put(self, url: str, data: bytes) -> None:
            raise AssertionError(f"uploaded {url}")

    with pytest.raises(RemoteError, match=r"index.html\?versionId=x: a file name .* cannot be an object key"):
        publish(site, "s3://bucket/pub", NoStore())  # type: ignore[arg-type]


@pytest.mark.parametrize("destination", ["s3://camp/ver?versionId=1", "s3://camp//nightly"])
def test_a_campaign_destination_the_client_would_store_elsewhere_is_refused_at_submit(
    tmp_path: Path, destination: str
) -> None:
    with pytest.raises(CampaignError, match="no empty, '.' or '..' parts and no '[?]versionId='"):
        load_campaign(write_campaign(tmp_path, destination=destination))


class _Listing:
    """A store whose bucket holds closed folders (with manifests) and one folder named with the
    version mark, planted beside them: what Store.children and Store.list would answer."""

    def __init__(self) -> None:
        self.warnings: list[str] = []
        self.listed: list[str] = []

    def list(self, url: str) -> dict[str, dict[str, object]]:
        self.listed.append(url)
        if url.endswith("/_manifests"):
            return {"s3://b/runs/_manifests/day1.json": {"etag": "e", "size": 10}}
        return {f"{url}/r/events.jsonl": {"etag": "e", "size": 10}}

    def children(self, url: str) -> tuple[list[str], dict[str, dict[str, object]]]:
        return ["day1", "day?2", "evil?versionId=abc"], {}

    def read_at_most(self, url: str, limit: int) -> bytes | None:
        return None  # the manifest vanished: day1 is listed instead


def test_a_listed_folder_named_with_the_version_mark_is_left_out_with_a_warning_and_the_rest_read() -> None:
    """A second review: once a sibling folder had a manifest, validate, site and report of the
    whole prefix stopped with exit 2 at a folder named with a '?'."""
    from reportgen.storage.remote import _objects

    store = _Listing()
    objects = _objects("s3://b/runs", store)  # type: ignore[arg-type]
    assert sorted(objects) == ["s3://b/runs/day1/r/events.jsonl", "s3://b/runs/day?2/r/events.jsonl"]
    assert store.warnings[-1] == "warning: s3://b/runs/evil?versionId=abc/ left out: '?versionId=' in a folder's name"


def test_publish_delete_leaves_a_key_with_the_version_mark_and_deletes_the_rest(tmp_path: Path) -> None:
    """A second review: --delete stopped at a stale key holding '?versionId=' (its delete would
    have removed another key), and never reached the stale pages after it."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("page", encoding="utf-8")

    class Stale:
        deleted: list[str] = []

        def list(self, url: str) -> dict[str, dict[str, object]]:
            return {f"s3://b/pub/{name}": {"etag": "x", "size": 1} for name in ("a?versionId=1", "zzz-stale.html")}

        def put(self, url: str, data: bytes) -> None:
            pass

        def delete(self, url: str) -> None:
            self.deleted.append(url)

    store = Stale()
    result = publish(site, "s3://b/pub", store, delete=True)  # type: ignore[arg-type]
    assert store.deleted == result.deleted == ["s3://b/pub/zzz-stale.html"]
    assert result.undeletable == ["s3://b/pub/a?versionId=1"]


@pytest.mark.parametrize("name", ["r?1/events.jsonl", "run 1 (retry)/events.jsonl", "r%20/a=b,c/events.jsonl"])
def test_a_manifest_lists_any_key_the_listing_gave(name: str) -> None:
    """A third review: `reportgen manifest` wrote a folder holding a run folder "r?1/", and every
    reader refused its own manifest ("not a plain path") and listed the folder instead."""
    from reportgen.storage.remote import manifest_objects

    data = json.dumps({"format": 1, "objects": {name: {"etag": "abc", "size": 3}}}).encode()
    assert manifest_objects(data, "s3://b/runs/day/") == {f"s3://b/runs/day/{name}": {"etag": "abc", "size": 3}}


@pytest.mark.parametrize(
    "name", ["../elsewhere/events.jsonl", "a//b", "./a", "a?versionId=1/events.jsonl", "a\nb", "", "x" * 1025]
)
def test_a_manifest_key_outside_its_folder_or_read_as_another_is_refused(name: str) -> None:
    from reportgen.storage.remote import manifest_objects

    data = json.dumps({"format": 1, "objects": {name: {"etag": "abc", "size": 3}}}).encode()
    with pytest.raises(ValueError, match="is not a plain path inside the folder"):
        manifest_objects(data, "s3://b/runs/day/")


def test_validate_says_what_listing_a_prefix_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """A third review: a folder left out for its name, or a manifest not used, was a warning of
    the store that only `site` printed; `validate s3://b/runs` showed the other runs, exit 0,
    and nothing else."""
    from click.testing import CliRunner

    from reportgen.cli import main
    from reportgen.storage import sources

    class Listed:
        def __init__(self) -> None:
            self.warnings: list[str] = []

    def listing(location: str, store: Listed) -> list[object]:
        store.warnings.append(f"warning: {location}/day?versionId=3/ left out: '?versionId=' in a folder's name")
        return []

    monkeypatch.setattr(sources, "Store", Listed)
    monkeypatch.setattr(sources, "list_logs", listing)
    done = CliRunner().invoke(main, ["validate", "s3://b/runs"])
    assert (
        "reportgen validate: warning: s3://b/runs/day?versionId=3/ left out: '?versionId=' in a folder's name"
        in done.output
    )
    found = sources.find_runs(["s3://b/runs"])
    assert found.warnings == ["warning: s3://b/runs/day?versionId=3/ left out: '?versionId=' in a folder's name"]
