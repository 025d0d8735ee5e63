"""Where the templates are, in a module of its own: the no-op check of `reportgen site` stats
every template file, and should not import the renderer (markupsafe, the asset code) to learn
where they live."""

from __future__ import annotations

from pathlib import Path


def templates_dir() -> Path:
    """Installed: reportgen/templates. From a source checkout: the repository's templates/."""
    # The package's own folder (what importlib.resources.files gives for a plain package, without
    # importing importlib.resources, which costs a no-op site build a fifth of its time).
    installed = Path(__file__).resolve().parents[1] / "templates"
    if installed.is_dir():
        return installed
    return Path(__file__).resolve().parents[2] / "templates"
