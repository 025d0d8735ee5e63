"""What the small linear test workloads share (graph_break.py, input_written.py,
noisy_reference.py), imported from beside them as a workload's local module: inputs of shape
(batch, length, 8) seeded by the length, one output "y", and the lowest cosine to the reference."""

import torch


def make_inputs(batch, length, layout):
    return {"x": torch.randn(batch, length, 8, generator=torch.Generator().manual_seed(length))}


def run_model(model, inputs):
    return {"y": model(inputs["x"])}


def task_metric(outputs, reference, inputs):
    o, r = outputs["y"].double().flatten(0, -2), reference["y"].double().flatten(0, -2)
    return float(torch.nn.functional.cosine_similarity(o, r, dim=-1).min())
