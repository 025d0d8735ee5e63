"""On-device collector: runs one workload plan and writes a JSON-lines record of facts.

It imports only the standard library and torch (plus torch_neuronx where present), so the
folder can be copied onto a device host and run as ``python -m collector``. It measures and
records; it never judges. Judgement lives in ``reportgen``.
"""

__version__ = "0.1.0"
