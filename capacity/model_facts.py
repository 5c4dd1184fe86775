"""Model facts: a Hugging Face config.json plus safetensors figures, and what the planner derives from them.

Owns the facts file format (``model_id``, ``config``, ``safetensors_parameters``,
``safetensors_total_size_bytes``; optional ``safetensors_total_params``, ``revision``, ``notes``,
``sources``), the built-in catalog under ``data/models/`` and the architecture read from a config:
layers, attention kind per layer (full, sliding window, chunked local; MLA), KV heads, head size,
mixture-of-experts layout and context limit. Multimodal configs are read through their
``text_config``. Weight sizes live in ``capacity.weights``.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from capacity.errors import CapacityError, UnknownModelError

AttentionKind = Literal["full", "sliding", "chunked"]
CATALOG_DIR = "models"
# Keys Hugging Face configs use for the context length, in vLLM's order of preference.
CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "max_sequence_length")
# Config types whose HF config class ties the LM head to the embeddings when the key is absent.
TIED_BY_DEFAULT = ("gemma", "gemma2", "gemma3", "gemma3_text")
# Llama 4: every fourth layer is a global (NoPE) layer unless ``no_rope_layers`` says otherwise.
LLAMA4_NOPE_INTERVAL = 4


@dataclass(frozen=True)
class AttentionLayer:
    """The attention of one decoder layer: full, sliding window ``window`` or chunked local ``window``."""

    kind: AttentionKind
    window: int | None = None


@dataclass(frozen=True)
class ModelFacts:
    """A model as published: its config.json and its checkpoint figures."""

    model_id: str
    config: dict[str, Any] = field(hash=False)
    safetensors_parameters: dict[str, int] | None = field(default=None, hash=False)
    safetensors_total_size_bytes: int | None = None
    safetensors_total_params: int | None = None
    revision: str | None = None
    notes: str | None = None
    sources: tuple[str, ...] = ()

    # ------------------------------------------------------------------ raw config access
    @property
    def text_config(self) -> dict[str, Any]:
        """The language-model part of the config (``text_config`` of multimodal models)."""
        inner = self.config.get("text_config")
        return inner if isinstance(inner, dict) else self.config

    def _get(self, *keys: str, default: Any = None) -> Any:
        for source in (self.text_config, self.config):
            for key in keys:
                if source.get(key) is not None:
                    return source[key]
        return default

    def _require_int(self, *keys: str) -> int:
        value = self._get(*keys)
        if value is None:
            raise CapacityError(f"model facts of {self.model_id}: config has no {keys[0]}")
        return int(value)

    @property
    def model_type(self) -> str:
        return str(self.text_config.get("model_type") or self.config.get("model_type") or "")

    # ------------------------------------------------------------------ shape
    @property
    def num_layers(self) -> int:
        return self._require_int("num_hidden_layers", "n_layer", "num_layers")

    @property
    def hidden_size(self) -> int:
        return self._require_int("hidden_size", "n_embd", "d_model")

    @property
    def num_attention_heads(self) -> int:
        return self._require_int("num_attention_heads", "n_head")

    @property
    def num_kv_heads(self) -> int:
        """KV heads as configured (MLA models cache one latent head instead; see ``is_mla``)."""
        if self._get("multi_query"):
            return 1
        return int(self._get("num_key_value_heads", "n_head_kv", default=self.num_attention_heads))

    @property
    def head_dim(self) -> int:
        explicit = self._get("head_dim")
        return int(explicit) if explicit else self.hidden_size // self.num_attention_heads

    @property
    def vocab_size(self) -> int:
        return self._require_int("vocab_size")

    @property
    def intermediate_size(self) -> int:
        """The dense MLP width (Llama 4: the width of its dense layers)."""
        return int(
            self._get("intermediate_size_mlp", "intermediate_size", "n_inner", default=4 * self.hidden_size)
        )

    @property
    def context_limit(self) -> int | None:
        """The longest ``max_model_len`` vLLM accepts by default, or None when the config does not say."""
        value = self._get(*CONTEXT_KEYS)
        return None if value is None else int(value)

    @property
    def max_position_embeddings(self) -> int:
        limit = self.context_limit
        if limit is None:
            raise CapacityError(f"model facts of {self.model_id}: config has no max_position_embeddings")
        return limit

    @property
    def torch_dtype(self) -> str:
        """The checkpoint dtype (``bfloat16`` when the config does not say, as for most current models)."""
        return str(self._get("torch_dtype", "dtype", default="bfloat16")).removeprefix("torch.")

    @property
    def tie_word_embeddings(self) -> bool:
        value = self._get("tie_word_embeddings")
        return bool(value) if value is not None else self.model_type in TIED_BY_DEFAULT

    @property
    def quantization_config(self) -> dict[str, Any] | None:
        value = self._get("quantization_config")
        return value if isinstance(value, dict) and value else None

    @property
    def is_multimodal(self) -> bool:
        return isinstance(self.config.get("vision_config"), dict)

    def weight_bytes(self, dtype: str = "auto", quantization: str | None = None) -> int:
        """Bytes vLLM loads for the whole model with this ``dtype`` and ``quantization`` (see capacity.weights)."""
        from capacity.weights import weight_bytes  # weights reads these facts; imported late to avoid a cycle

        return weight_bytes(self, dtype, quantization).total

    # ------------------------------------------------------------------ attention
    @property
    def is_mla(self) -> bool:
        """Multi-head latent attention (DeepSeek V2/V3, Kimi K2): one compressed KV latent per token."""
        return self._get("kv_lora_rank") is not None

    @property
    def mla_cache_dim(self) -> int:
        """Latent width cached per token and layer: ``kv_lora_rank + qk_rope_head_dim``."""
        return int(self._get("kv_lora_rank")) + int(self._get("qk_rope_head_dim", default=0))

    @property
    def attention_layers(self) -> tuple[AttentionLayer, ...]:
        """The attention kind of every decoder layer, as vLLM builds its KV cache specs."""
        n = self.num_layers
        types = self._get("layer_types")
        window = self._get("sliding_window")
        if isinstance(types, list) and len(types) == n:
            return tuple(self._layer_from_type(str(t), window) for t in types)
        chunk = self._get("attention_chunk_size")
        if chunk:
            nope = self._get("no_rope_layers") or [int((i + 1) % LLAMA4_NOPE_INTERVAL != 0) for i in range(n)]
            return tuple(
                AttentionLayer("chunked", int(chunk)) if nope[i] else AttentionLayer("full") for i in range(n)
            )
        if not window:
            return (AttentionLayer("full"),) * n
        if self.model_type == "gemma2":
            return tuple(
                AttentionLayer("sliding", int(window)) if i % 2 == 0 else AttentionLayer("full")
                for i in range(n)
            )
        pattern = self._get("sliding_window_pattern")
        if pattern:
            p = int(pattern)
            return tuple(
                AttentionLayer("sliding", int(window)) if (i + 1) % p else AttentionLayer("full")
                for i in range(n)
            )
        if "use_sliding_window" in self.text_config:
            if not self.text_config["use_sliding_window"]:
                return (AttentionLayer("full"),) * n
            first = int(self._get("max_window_layers", default=0))
            return tuple(
                AttentionLayer("sliding", int(window)) if i >= first else AttentionLayer("full")
                for i in range(n)
            )
        return (AttentionLayer("sliding", int(window)),) * n

    @staticmethod
    def _layer_from_type(layer_type: str, window: Any) -> AttentionLayer:
        if "sliding" in layer_type and window:
            return AttentionLayer("sliding", int(window))
        return AttentionLayer("full")

    # ------------------------------------------------------------------ mixture of experts
    @property
    def num_experts(self) -> int:
        return int(self._get("n_routed_experts", "num_local_experts", "num_experts", default=0) or 0)

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 1

    @property
    def experts_per_token(self) -> int:
        return int(self._get("num_experts_per_tok", "num_experts_per_token", "top_k", default=0) or 0)

    @property
    def moe_intermediate_size(self) -> int:
        """Width of one routed expert."""
        return int(self._get("moe_intermediate_size", "intermediate_size", default=0))

    @property
    def shared_expert_intermediate_size(self) -> int:
        """Total width of the always-on shared expert(s) of an MoE layer (0 when none)."""
        if self._get("shared_expert_intermediate_size"):
            return int(self._get("shared_expert_intermediate_size"))
        if self._get("n_shared_experts"):
            return int(self._get("n_shared_experts")) * self.moe_intermediate_size
        if self.model_type.startswith("llama4"):
            return int(self._get("intermediate_size"))
        return 0

    def is_moe_layer(self, index: int) -> bool:
        """Whether decoder layer ``index`` routes its MLP through experts (model-family rules as in vLLM)."""
        if not self.is_moe:
            return False
        if self._get("first_k_dense_replace") is not None:
            freq = int(self._get("moe_layer_freq", default=1))
            return index >= int(self._get("first_k_dense_replace")) and index % freq == 0
        if self._get("interleave_moe_layer_step"):
            return (index + 1) % int(self._get("interleave_moe_layer_step")) == 0
        if index in (self._get("mlp_only_layers") or []):
            return False
        step = int(self._get("decoder_sparse_step", default=1) or 1)
        return (index + 1) % step == 0


# ---------------------------------------------------------------------- loading


def facts_from_dict(data: dict[str, Any], origin: str) -> ModelFacts:
    """Build ModelFacts from a parsed facts file; ``origin`` names the file in error messages."""
    if not isinstance(data, dict):
        raise CapacityError(f"model facts file {origin}: expected a JSON object")
    model_id = data.get("model_id")
    config = data.get("config")
    if not isinstance(model_id, str) or not model_id:
        raise CapacityError(f"model facts file {origin}: missing 'model_id'")
    if not isinstance(config, dict):
        raise CapacityError(f"model facts file {origin}: missing 'config' (the model's config.json)")
    params = data.get("safetensors_parameters")
    if params is not None and not (
        isinstance(params, dict) and all(isinstance(v, int) for v in params.values())
    ):
        raise CapacityError(f"model facts file {origin}: 'safetensors_parameters' must map dtype to a count")
    sources = tuple(
        s["source"] if isinstance(s, dict) and "source" in s else str(s) for s in data.get("sources") or ()
    )
    return ModelFacts(
        model_id=model_id,
        config=copy.deepcopy(config),
        safetensors_parameters=dict(params) if params else None,
        safetensors_total_size_bytes=_optional_int(data, "safetensors_total_size_bytes", origin),
        safetensors_total_params=_optional_int(data, "safetensors_total_params", origin),
        revision=data.get("revision"),
        notes=data.get("notes"),
        sources=sources,
    )


def _optional_int(data: dict[str, Any], key: str, origin: str) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or value <= 0:
        raise CapacityError(f"model facts file {origin}: {key!r} must be a positive integer or null")
    return value


def load_model_facts(path: str | Path) -> ModelFacts:
    """Read a facts file (as written by ``python -m capacity lock``)."""
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CapacityError(f"model facts file {file} does not exist") from None
    except (OSError, json.JSONDecodeError) as err:
        raise CapacityError(f"model facts file {file} cannot be read: {err}") from None
    return facts_from_dict(data, str(file))


@cache
def _catalog_texts() -> dict[str, tuple[str, str]]:
    """model_id (lower case) -> (file name, file text) of the built-in catalog."""
    entries: dict[str, tuple[str, str]] = {}
    for item in resources.files("capacity").joinpath("data", CATALOG_DIR).iterdir():
        if item.name.endswith(".json"):
            text = item.read_text(encoding="utf-8")
            entries[json.loads(text)["model_id"].lower()] = (item.name, text)
    return entries


def catalog_model_ids() -> list[str]:
    """Model ids of the built-in catalog, sorted."""
    return sorted(json.loads(text)["model_id"] for _, text in _catalog_texts().values())


def catalog_model_facts(model_id: str) -> ModelFacts:
    """Facts of a catalog model (a fresh copy each call, so callers cannot alter the catalog)."""
    entry = _catalog_texts().get(model_id.lower())
    if entry is None:
        raise UnknownModelError(
            f"model {model_id!r} is not in the built-in catalog ({', '.join(catalog_model_ids())}); "
            f"write its facts with `python -m capacity lock {model_id} --out FILE` and pass that file"
        )
    name, text = entry
    return facts_from_dict(json.loads(text), f"capacity/data/{CATALOG_DIR}/{name}")


def resolve_model_facts(
    model_id: str, facts_file: str | Path | None = None, base_dir: Path | None = None
) -> ModelFacts:
    """Facts for ``model_id``: from ``facts_file`` (relative to ``base_dir``) when given, else the catalog."""
    if facts_file is None:
        return catalog_model_facts(model_id)
    path = Path(facts_file)
    if base_dir is not None and not path.is_absolute():
        path = base_dir / path
    facts = load_model_facts(path)
    if facts.model_id.lower() != model_id.lower():
        raise CapacityError(f"model facts file {facts_file} describes {facts.model_id}, not {model_id}")
    return facts
