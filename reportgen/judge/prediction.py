"""What an inspection predicted (``python -m collector inspect``) set against what a run observed.

The prediction comes from the inspected graphs and the target's constraint data: operators the
data documents as unsupported or falling back to the CPU. The observation is the run's measured
fallback lists (``operators`` events). Each row says which side a fact comes from; where the
data lists no such operator, that is said instead of an empty prediction.
"""

from __future__ import annotations

from dataclasses import dataclass

from reportgen.contract.inspection import InspectionLog
from reportgen.judge.backend_docs import BackendDocs
from reportgen.model.runmodel import RunModel

FALLING = ("unsupported", "cpu-fallback")


@dataclass(frozen=True)
class PredictionRow:
    label: str
    value: str
    source: str


def predicted_against_observed(run: RunModel, inspection: InspectionLog, docs: BackendDocs) -> list[PredictionRow]:
    graph_ops = sorted({op.name for s in inspection.shapes for op in s.operators})
    predicted = sorted({op for entry in docs.operators if entry.kind in FALLING for op in entry.ops if op in graph_ops})
    measured = [c for c in run.cells if c.fallback_status == "measured"]
    observed = sorted({op for c in measured for op in c.fallback_items})
    rows = [
        PredictionRow(
            "inspection",
            f"{inspection.start.workload}: {len(inspection.shapes)} shape(s), {len(graph_ops)} distinct operators in the graphs, captured on {inspection.start.host}",
            inspection.path,
        )
    ]
    why = f"predicted from the graph, not measured on the device ({docs.release})"
    if predicted:
        rows.append(PredictionRow("predicted CPU fallback", ", ".join(predicted), why))
    elif not docs.fallback_listed:
        rows.append(
            PredictionRow(
                "predicted CPU fallback",
                f"none can be predicted: {docs.operators_note or 'the constraint data lists no operator that falls back'}",
                why,
            )
        )
    else:
        rows.append(
            PredictionRow("predicted CPU fallback", "none of the graphs' operators is listed as falling back", why)
        )
    if not measured:
        rows.append(
            PredictionRow(
                "observed CPU fallback",
                "not measured in this run: nothing to set the prediction against",
                "operators.fallback",
            )
        )
        return rows
    rows.append(
        PredictionRow(
            "observed CPU fallback",
            ", ".join(observed) or f"none, in {len(measured)} cell(s) whose fallback was measured",
            "operators.fallback",
        )
    )
    unforeseen = [op for op in observed if op not in predicted]
    missed = [op for op in predicted if op not in observed]
    if unforeseen:
        rows.append(
            PredictionRow("observed, not predicted", ", ".join(unforeseen), "operators.fallback against the prediction")
        )
    if missed:
        rows.append(
            PredictionRow("predicted, not observed", ", ".join(missed), "operators.fallback against the prediction")
        )
    if not unforeseen and not missed:
        rows.append(
            PredictionRow(
                "difference",
                "none: the observed fallback is what was predicted",
                "operators.fallback against the prediction",
            )
        )
    return rows
