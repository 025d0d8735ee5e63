"""reportgen's version, in a module that imports nothing (the layers below cli read it)."""

__version__ = "0.29.0"
