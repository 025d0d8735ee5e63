"""A failed attempt's log read from its end (campaign status, the site's campaign pages) when
the log in the store is replaced between the listing and the read: what is shown is the end of
the log as it is read, never the middle of a longer one, and a shorter one is no error.

The store is moto's standalone server on 127.0.0.1 (tests/services.py), the `s3` fixture of tests/conftest.py."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def tails(client: Any) -> Any:
    client.create_bucket(Bucket="tails")
    return client


@pytest.mark.parametrize(
    "now",
    [
        b"collector: started\n" + b"y" * 300 + b"\ntask 1 (s1-r0): collector exited 3\n",  # grew
        b"task 1 (s1-r0): collector exited 3\n",  # rewritten shorter
    ],
)
def test_a_log_replaced_after_the_listing_is_read_from_its_end(tails: Any, now: bytes) -> None:
    from campaign.ledger import TAIL_BYTES, _last_lines
    from reportgen.storage.ledgers import store_access
    from reportgen.storage.remote import Store

    key = "runs/_campaigns/c1/tasks/task-1.s1-r0.log"
    tails.put_object(Bucket="tails", Key=key, Body=b"collector: started\n" + b"x" * 100 + b"\n")
    store = Store()
    listing = store.list("s3://tails/runs/_campaigns/c1")
    tails.put_object(Bucket="tails", Key=key, Body=now)
    read, _ = store_access(store, listing, "s3://tails/runs/_campaigns/c1")
    data = read("tasks/task-1.s1-r0.log", tail=TAIL_BYTES)
    assert data == now
    assert _last_lines(data or b"")[-1] == "task 1 (s1-r0): collector exited 3"


def test_the_end_is_one_suffix_range_request(tails: Any) -> None:
    from reportgen.storage.remote import Store

    tails.put_object(Bucket="tails", Key="runs/log", Body=b"a" * 50 + b"THE END\n")
    store = Store()
    asked: list[dict[str, Any]] = []
    real = store.fs.cat_file

    def spy(path: str, **options: Any) -> bytes:
        asked.append(options)
        data: bytes = real(path, **options)
        return data

    store.fs.cat_file = spy
    assert store.read_end("s3://tails/runs/log", 58, 9) == b"aTHE END\n"
    assert asked == [{"start": -9}]
    tails.put_object(Bucket="tails", Key="runs/log", Body=b"END\n")  # shorter than listed: no error
    assert store.read_end("s3://tails/runs/log", 58, 9) == b"END\n"
