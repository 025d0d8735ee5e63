"""torch's first import in a collector process, where torch autoloads the backend modules
installed beside it (the ``torch.backends`` entry points: torch_neuronx registers itself there).
One that fails to load makes ``import torch`` itself raise, whatever the target: the command says
so in one line with the module's own cause (exit 3), never a traceback. Standard library only.
"""

from __future__ import annotations


def torch_import_problem() -> str | None:
    """Import torch; None when it imports, else why not, on one line's worth of text."""
    try:
        import torch  # noqa: F401
    except Exception as exc:  # a broken backend module stops `import torch` itself
        said = f"{type(exc).__name__}: {str(exc)[:300]}"
        if exc.__cause__ is not None:  # torch names the module; its own error says what is missing
            said += f" (because {type(exc.__cause__).__name__}: {str(exc.__cause__)[:300]})"
        return f"torch cannot be imported here: {said}"
    return None
