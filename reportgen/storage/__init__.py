"""Where run logs come from, and where built sites go.

``local.py`` finds logs in folders; ``remote.py`` lists, fetches and uploads objects under
``s3://`` prefixes; ``sources.py`` is the one interface the commands use: it takes what the user
typed (folders, files, prefixes) and returns log references that the contract layer can read
(a ``Path``, or a ``RemoteLog`` with the same few methods).
"""

REMOTE_SCHEMES = ("s3://",)
# A built site's state (publish/site.py): publish uploads it last, beside the pages it lists.
SITE_STATE_NAME = ".reportgen-state.json"


def is_remote(location: object) -> bool:
    """True for an object-store location such as ``s3://bucket/prefix``."""
    return isinstance(location, str) and location.startswith(REMOTE_SCHEMES)
