"""A decoder-only language model served one request at a time: the seed's Scenario A.

Architecture real, weights synthetic: transformers' ``LlamaForCausalLM`` built from a
``LlamaConfig`` with weights drawn from a fixed seed (no checkpoint is fetched or read). The
tokenizer is real and works offline: transformers' byte-level ``ByT5Tokenizer`` (UTF-8 bytes
plus three special tokens, pad id 0), which needs no vocabulary file.

Two configurations (the plan's ``[generation] config``):

* ``tiny``: 2 layers, hidden 32, ~40k parameters; seconds on a CPU, for tests and CPU samples;
* ``small-100m``: 12 layers, hidden 768, 12 heads (4 key/value heads), MLP 3072, ~100M
  parameters (close to GPT-2 small); for a device, where a CPU run takes minutes per bucket.

The collector (``collector/generation.py``) pads each request to its bucket and runs the
generation: one prefill call of the padded prompt, then one decode call per new token, all
against a static KV cache of the plan's fixed maximum length (so every decode call has one
shape). Padding is on the left, as decoder generation expects: the last prompt token sits at
the last position, and position ids count real tokens only.
"""

from __future__ import annotations

import inspect
import os
from functools import lru_cache
from typing import Any

import torch
from torch import nn

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

TASK_METRIC = "greedy_steps_agreeing"
ATTENTION_PATH = "transformers LlamaForCausalLM, attn_implementation='sdpa', StaticCache"
SEED = 0
PADDING_SIDE = "left"

CONFIGS: dict[str, dict[str, Any]] = {
    "tiny": {
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
    },
    "small-100m": {
        "hidden_size": 768,
        "intermediate_size": 3072,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "num_key_value_heads": 4,
    },
}
WEIGHTS_ORIGIN = "synthetic"  # the architecture is real; its weights are seeded, never trained
_chosen = {"config": "tiny"}


def configure(name: str) -> None:
    """Which configuration build_model builds (the plan's [generation] config)."""
    if name not in CONFIGS:
        raise ValueError(f"unknown configuration {name!r}; this workload offers {', '.join(CONFIGS)}")
    _chosen["config"] = name


def _revision() -> str:
    import transformers

    return (
        f"architecture real, weights synthetic: transformers {transformers.__version__} LlamaForCausalLM, config {_chosen['config']!r}, "
        f"weights from seed {SEED}; tokenizer transformers ByT5Tokenizer (byte-level)"
    )


def __getattr__(name: str) -> Any:  # MODEL_REVISION names the configuration chosen
    if name == "MODEL_REVISION":
        return _revision()
    raise AttributeError(name)


# A shipped request text; requests of a given length take its first tokens, repeating it.
TEXT = (
    "Support ticket 4471: the nightly export to the warehouse stopped after the storage migration. "
    "The job log shows a timeout while writing partition 12, then a retry that never finished. "
    "Please summarise the cause, list the affected tables and propose the next step for the on-call engineer. "
)


@lru_cache(maxsize=1)
def tokenizer() -> Any:
    from transformers import ByT5Tokenizer

    return ByT5Tokenizer()


def _config(name: str) -> Any:
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=len(tokenizer()),
        max_position_embeddings=2048,
        pad_token_id=tokenizer().pad_token_id,
        eos_token_id=tokenizer().eos_token_id,
        bos_token_id=None,
        tie_word_embeddings=False,
        # Taken by the wrapper around __init__ that transformers' typed signature does not show.
        attn_implementation="sdpa",  # type: ignore[call-arg]
        **CONFIGS[name],
    )


def build_model() -> nn.Module:
    from transformers import LlamaForCausalLM

    torch.manual_seed(SEED)
    model = LlamaForCausalLM(_config(_chosen["config"]))
    # Synthetic weights at the initializer's scale give near-uniform next-token scores, where
    # greedy choices tie on rounding noise; a wider output layer gives clear winners, as a
    # trained model has.
    with torch.no_grad():
        model.lm_head.weight.mul_(8.0)
    return model.eval()


def make_inputs(batch: int, length: int, layout: str) -> dict[str, torch.Tensor]:
    """The tokenised request, unpadded: ``length`` byte tokens of the shipped text per row (row
    i starts i lines further on, so rows differ); the collector pads it to the bucket."""
    ids = tokenizer()(TEXT, add_special_tokens=False)["input_ids"]
    rows = []
    for row in range(batch):
        start = (row * 37) % len(ids)
        need = (ids * (2 + (start + length) // len(ids)))[start : start + length]
        rows.append(need)
    input_ids = torch.tensor(rows, dtype=torch.int64)
    return {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids)}


def pad_id() -> int:
    return int(tokenizer().pad_token_id)


def new_cache(model: nn.Module, batch: int, max_cache_len: int) -> Any:
    """A static KV cache of fixed length on the model's device and dtype."""
    from transformers import StaticCache

    # nn.Module types every attribute as Tensor | Module; this one is the model's PreTrainedConfig.
    config: Any = model.config
    cache = StaticCache(config=config, max_cache_len=max_cache_len)
    return cache


def step(
    model: nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    position_ids: torch.Tensor,
    cache: Any,
    cache_position: torch.Tensor,
) -> torch.Tensor:
    """One call of the model against the cache: prefill (the whole padded prompt) or decode
    (one token); returns the logits of every position fed, (batch, tokens, vocabulary)."""
    out = model(
        input_ids=input_ids,
        attention_mask=attention_mask,
        position_ids=position_ids,
        cache_position=cache_position,
        use_cache=True,
        **{_cache_keyword(model): cache},
    )
    return out.logits


_KEYWORD: dict[type, str] = {}


def _cache_keyword(model: nn.Module) -> str:
    """transformers 5 renamed forward's ``past_key_values`` to ``cache`` (the old name warns);
    read once per model class, outside any timed call after the first."""
    inner = getattr(model, "_orig_mod", model)
    found = _KEYWORD.get(type(inner))
    if found is None:
        found = _KEYWORD[type(inner)] = (
            "cache" if "cache" in inspect.signature(inner.forward).parameters else "past_key_values"
        )
    return found


def run_model(model: nn.Module, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """One plain forward call without a cache (the workload contract's single call)."""
    return {
        "logits": model(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"], use_cache=False).logits
    }


def task_metric(
    outputs: dict[str, torch.Tensor], reference: dict[str, torch.Tensor], inputs: dict[str, torch.Tensor]
) -> float:
    """For generation cells the collector counts agreeing greedy steps itself; this serves the
    plain contract: agreement of the argmax token at real positions."""
    mask = inputs["attention_mask"].bool()
    return float((outputs["logits"].argmax(-1)[mask] == reference["logits"].argmax(-1)[mask]).double().mean().item())
