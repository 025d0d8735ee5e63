"""A small transformer encoder over token ids: the fast workload the tests run.

Real preprocessing in miniature: token ids are int64 and padded to the bucket length, the
boolean attention mask is padded the same way, and attention goes through
``scaled_dot_product_attention``. The non-contiguous layout is the one a tokenizer that
writes (token id, token type) pairs produces: the ids are a strided view of that buffer.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

MODEL_REVISION = "tiny-encoder v1 (2 layers, d=32, 4 heads, vocab 101, init seed 0)"
WEIGHTS_ORIGIN = "synthetic"  # seeded initialisation, never trained
ATTENTION_PATH = "torch.nn.functional.scaled_dot_product_attention with a boolean key mask"
TASK_METRIC = "min_cosine_to_reference"
VOCAB, DIM, HEADS, LAYERS = 101, 32, 4, 2
PAD_ID = 0


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(DIM, 3 * DIM)
        self.out = nn.Linear(DIM, DIM)
        self.norm1 = nn.LayerNorm(DIM)
        self.ff = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM))
        self.norm2 = nn.LayerNorm(DIM)

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        b, l, _ = x.shape
        q, k, v = self.qkv(x).view(b, l, 3, HEADS, DIM // HEADS).permute(2, 0, 3, 1, 4)
        attn = F.scaled_dot_product_attention(q, k, v, attn_mask=keep[:, None, None, :])
        x = self.norm1(x + self.out(attn.transpose(1, 2).reshape(b, l, DIM)))
        return self.norm2(x + self.ff(x))


class TinyEncoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.pos = nn.Embedding(512, DIM)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = self.embed(input_ids) + self.pos(positions)[None]
        for block in self.blocks:
            x = block(x, attention_mask)
        return x


def build_model() -> nn.Module:
    torch.manual_seed(0)
    return TinyEncoder().eval()


def make_inputs(batch: int, length: int, layout: str) -> dict[str, torch.Tensor]:
    """Token ids with real-length requests padded to ``length``, and the matching mask."""
    gen = torch.Generator().manual_seed(1000 * batch + length)
    real = [max(1, length - 3 * i) for i in range(batch)]
    pairs = torch.zeros((batch, length, 2), dtype=torch.int64)
    for j, n in enumerate(real):
        pairs[j, :n, 0] = torch.randint(1, VOCAB, (n,), generator=gen)
    ids = pairs[..., 0]
    if layout == "contiguous":
        ids = ids.contiguous()
    mask = ids != PAD_ID
    return {"input_ids": ids, "attention_mask": mask}


def run_model(model: nn.Module, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {"hidden": model(inputs["input_ids"], inputs["attention_mask"])}


def task_metric(
    outputs: dict[str, torch.Tensor], reference: dict[str, torch.Tensor], inputs: dict[str, torch.Tensor]
) -> float:
    """Smallest cosine similarity between output and reference token vectors, real tokens only."""
    keep = inputs["attention_mask"].to("cpu")
    out = outputs["hidden"].detach().to("cpu", torch.float64)[keep]
    ref = reference["hidden"].detach().to("cpu", torch.float64)[keep]
    return float(F.cosine_similarity(out, ref, dim=-1).min().item())
